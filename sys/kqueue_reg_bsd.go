//go:build darwin || freebsd || netbsd || openbsd || dragonfly

package sys

import (
	"os"

	"golang.org/x/sys/unix"
)

// kqReg is one registration.
type kqReg struct {
	key      uint64
	interest uint32 // Readable and Writable only: the bits with filters
	mode     Mode
	epoch    uint64 // value of kqSelector.epoch once it reached the kernel
	tag      uint32 // what udata holds where it cannot hold the key
	spent    bool   // oneshot: its one event has been made (collect)
}

// udataOf is what a registration's filters carry in udata.
func (r *kqReg) udataOf() uint64 {
	if udataHoldsKey {
		return r.key
	}
	return uint64(r.tag)
}

// newRegLocked makes a registration, tagged where udata needs a tag.
func (s *kqSelector) newRegLocked(key uint64, interest uint32, mode Mode) *kqReg {
	r := &kqReg{key: key, interest: interest & (Readable | Writable), mode: mode}
	if !udataHoldsKey {
		s.nextTag++
		if s.nextTag == 0 {
			s.nextTag = 1
		}
		r.tag = s.nextTag
	}
	return r
}

func (s *kqSelector) Add(fd int, key uint64, interest uint32, mode Mode) error {
	if err := checkKey(key); err != nil {
		return os.NewSyscallError("kevent(add)", err)
	}
	if fd < 0 {
		return os.NewSyscallError("kevent(add)", unix.EBADF)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed.Load() {
		return ErrClosed
	}
	if _, ok := s.regs[fd]; ok {
		return os.NewSyscallError("kevent(add)", unix.EEXIST)
	}
	r := s.newRegLocked(key, interest, mode)
	if r.interest == 0 {
		// No filter to let the kernel check the descriptor.
		if _, err := unix.FcntlInt(uintptr(fd), unix.F_GETFD, 0); err != nil {
			return os.NewSyscallError("kevent(add)", err)
		}
	}
	var raw [maxChanges * keventWords]uint64
	changes := keventsIn(raw[:], maxChanges)
	n := changesFor(changes, fd, nil, r)
	if err := s.apply(changes[:n]); err != nil {
		s.revertLocked(fd, r, nil) // a filter may have made it in before the failure
		return os.NewSyscallError("kevent(add)", err)
	}
	r.epoch = s.epoch.Add(1)
	s.regs[fd] = r
	return nil
}

func (s *kqSelector) Modify(fd int, key uint64, interest uint32, mode Mode) error {
	if err := checkKey(key); err != nil {
		return os.NewSyscallError("kevent(modify)", err)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed.Load() {
		return ErrClosed
	}
	old, ok := s.regs[fd]
	if !ok {
		return missing("kevent(modify)", fd)
	}
	if !fdOpen(fd) {
		return os.NewSyscallError("kevent(modify)", unix.EBADF)
	}
	r := s.newRegLocked(key, interest, mode)
	var raw [maxChanges * keventWords]uint64
	changes := keventsIn(raw[:], maxChanges)
	n := changesFor(changes, fd, old, r)
	if err := s.apply(changes[:n]); err != nil {
		// A failed Modify leaves the registration as it was (the Selector
		// contract; package poll keeps the old key then, and would drop
		// every event under a half-applied new one as stale). The kernel
		// may hold part of the change: take it back to old's filters, as
		// Add takes back a filter that made it in. Re-adding them may
		// report readiness again, a spurious event at worst; a spent
		// oneshot has no filter left to re-add and stays disarmed.
		s.revertLocked(fd, r, old)
		old.epoch = s.epoch.Add(1) // its filters changed during any wait now running
		return os.NewSyscallError("kevent(modify)", err)
	}
	r.epoch = s.epoch.Add(1)
	s.regs[fd] = r
	return nil
}

// revertLocked takes fd's filters in the kernel from what a failed change
// may have left of tried back to was (nil: none). Best effort: whatever a
// failure here leaves goes when the descriptor is closed, and its events
// carry a key the caller no longer holds. mu held.
func (s *kqSelector) revertLocked(fd int, tried, was *kqReg) {
	var raw [maxChanges * keventWords]uint64
	undo := keventsIn(raw[:], maxChanges)
	_ = s.apply(undo[:changesFor(undo, fd, tried, was)])
}

func (s *kqSelector) Delete(fd int) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed.Load() {
		return ErrClosed
	}
	old, ok := s.regs[fd]
	if !ok {
		return missing("kevent(delete)", fd)
	}
	delete(s.regs, fd)
	if !fdOpen(fd) {
		// Closing it took its filters out of the kernel already.
		s.epoch.Add(1)
		return os.NewSyscallError("kevent(delete)", unix.EBADF)
	}
	var raw [maxChanges * keventWords]uint64
	changes := keventsIn(raw[:], maxChanges)
	n := changesFor(changes, fd, old, nil)
	err := s.apply(changes[:n])
	s.epoch.Add(1)
	if err != nil {
		return os.NewSyscallError("kevent(delete)", err)
	}
	return nil
}
