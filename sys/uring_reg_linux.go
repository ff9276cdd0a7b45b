//go:build linux

package sys

import (
	"os"
	"sync/atomic"

	"golang.org/x/sys/unix"
)

// Registrations on the io_uring backend: Add, Modify, Delete and Drained,
// and the queueing of their requests. See uringSelector for the invariants
// (who is armed, what is queued, when it is submitted).

// checkWatchable answers for fd as epoll_ctl would: EBADF if it is not
// open, EPERM if its file has no poll method (regular files, directories,
// some devices). A poll request on such a file would complete at once,
// always ready, and a multishot one would end at once, over and over. A
// socket, a pipe or an anonymous file (eventfd, timerfd, signalfd, pidfd)
// always has one; any other file is asked about by a throwaway epoll
// instance, the one authority on it, at the price of three system calls
// for an uncommon kind of descriptor.
func checkWatchable(fd int) error {
	var st unix.Stat_t
	if err := ignoringEINTR(func() error { return unix.Fstat(fd, &st) }); err != nil {
		return err
	}
	switch st.Mode & unix.S_IFMT {
	case unix.S_IFSOCK, unix.S_IFIFO, 0:
		return nil
	}
	epfd, err := unix.EpollCreate1(unix.EPOLL_CLOEXEC)
	if err != nil {
		return err
	}
	defer unix.Close(epfd)
	return ignoringEINTR(func() error { return unix.EpollCtl(epfd, unix.EPOLL_CTL_ADD, fd, &unix.EpollEvent{}) })
}

func (s *uringSelector) Add(fd int, key uint64, interest uint32, mode Mode) error {
	if s.closed.Load() {
		return ErrClosed
	}
	if err := checkKey(key); err != nil {
		return os.NewSyscallError("io_uring(add)", err)
	}
	if fd < 0 {
		return os.NewSyscallError("io_uring(add)", unix.EBADF)
	}
	if err := checkWatchable(fd); err != nil {
		return os.NewSyscallError("io_uring(add)", err)
	}
	s.mu.Lock()
	defer s.unlockNudging()
	if s.closed.Load() {
		return ErrClosed
	}
	if _, ok := s.table[fd]; ok {
		return os.NewSyscallError("io_uring(add)", unix.EEXIST)
	}
	return s.addLocked(fd, key, interest, mode)
}

// addLocked is Add once the arguments are checked and mu is held.
func (s *uringSelector) addLocked(fd int, key uint64, interest uint32, mode Mode) error {
	e := &uringEntry{key: key, interest: interest, mode: mode}
	if err := s.armLocked(fd, e); err != nil {
		return err
	}
	s.table[fd] = e
	return s.submitIfBlockedLocked()
}

func (s *uringSelector) Modify(fd int, key uint64, interest uint32, mode Mode) error {
	if s.closed.Load() {
		return ErrClosed
	}
	if err := checkKey(key); err != nil {
		return os.NewSyscallError("io_uring(modify)", err)
	}
	if !fdOpen(fd) {
		return os.NewSyscallError("io_uring(modify)", unix.EBADF)
	}
	s.mu.Lock()
	defer s.unlockNudging()
	if s.closed.Load() {
		return ErrClosed
	}
	e, ok := s.table[fd]
	if !ok {
		return os.NewSyscallError("io_uring(modify)", unix.ENOENT)
	}
	if e.st != nil {
		s.streamModifyLocked(fd, e, key, interest, mode)
		return s.submitIfBlockedLocked()
	}
	// Room for both SQEs first, so that a failure leaves the entry as it
	// was (the contract's failed Modify).
	if err := s.roomLocked(2); err != nil {
		return err
	}
	s.disarmLocked(fd, e)
	e.resubmit = false
	e.quiet, e.reported, e.held, e.due, e.multi = 0, 0, 0, 0, false
	e.key, e.interest, e.mode = key, interest, mode
	if err := s.armLocked(fd, e); err != nil {
		return err
	}
	return s.submitIfBlockedLocked()
}

// Delete removes fd's entry and submits the removal of its request at
// once. Like epoll_ctl, it answers EBADF for a descriptor that is no longer
// open, after removing its entry if it had one.
func (s *uringSelector) Delete(fd int) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed.Load() {
		return ErrClosed
	}
	e, ok := s.table[fd]
	if !ok {
		return missing("io_uring(delete)", fd)
	}
	if e.st != nil {
		return s.streamDeleteLocked(fd, e)
	}
	if err := s.roomLocked(1); err != nil {
		return err
	}
	s.disarmLocked(fd, e)
	e.resubmit, e.due = false, 0
	delete(s.table, fd)
	if err := s.submitLocked(); err != nil {
		return err
	}
	if !fdOpen(fd) {
		return os.NewSyscallError("io_uring(delete)", unix.EBADF)
	}
	return nil
}

// Drained ends the quiet of the conditions in ready. Those the kernel
// announced while they were quiet (held) and that are still there (a
// zero-timeout poll(2) says) are due: the next Select reports them (a
// blocked one is nudged). It costs a lock and a map lookup, and the
// poll(2) when something was held.
func (s *uringSelector) Drained(fd int, ready uint32) error {
	if s.closed.Load() {
		return ErrClosed
	}
	s.mu.Lock()
	e, ok := s.table[fd]
	if !ok {
		s.mu.Unlock()
		return missing("io_uring(drained)", fd)
	}
	if e.st != nil {
		s.streamDrainedLocked(fd, e, ready)
		s.unlockNudging()
		return nil
	}
	bits := e.quiet & ready
	e.quiet &^= bits
	due := e.held & bits
	e.held &^= bits
	if bits&^e.mask != 0 && e.armed {
		// The request in the kernel does not ask for them: replace it
		// (a new generation), and its first look reports what is there.
		defer s.unlockNudging()
		if err := s.roomLocked(2); err != nil {
			return err
		}
		s.disarmLocked(fd, e)
		if err := s.armLocked(fd, e); err != nil {
			return err
		}
		return s.submitIfBlockedLocked()
	}
	if due != 0 {
		// Held means announced, not still there: the caller's EAGAIN may
		// have come after. Look, so that a due condition is a true one
		// (one poll(2), only when something was held).
		due &= pollNow(fd, e.interest)
	}
	nudge := false
	if due != 0 {
		if e.due == 0 {
			s.due = append(s.due, uringResubmit{fd, e})
		}
		e.due |= due
		nudge = s.blocked
	}
	s.mu.Unlock()
	if nudge {
		s.nudge()
	}
	return nil
}

// armLocked gives e a new generation and queues its poll request.
func (s *uringSelector) armLocked(fd int, e *uringEntry) error {
	s.newGenLocked(e)
	return s.pollLocked(fd, e)
}

// newGenLocked gives e a new generation, so that the completions of its
// requests so far are stale.
func (s *uringSelector) newGenLocked(e *uringEntry) {
	s.nextGen = (s.nextGen + 1) & (1<<30 - 1)
	if s.nextGen == 0 {
		s.nextGen = 1
	}
	e.gen = s.nextGen
}

// pollLocked queues e's poll request at its current generation.
// An emulated edge's request asks only for what is not quiet (as the
// poll(2) backend's pollfd does), so that a quiet condition that lasts
// does not complete it at once each time it is submitted again.
func (s *uringSelector) pollLocked(fd int, e *uringEntry) error {
	mask := e.interest
	if e.emulatedEdge() {
		mask &^= e.quiet
	}
	sqe := uringSQE{opcode: uringOpPollAdd, fd: int32(fd), opFlags: uringPollEvents(mask),
		userData: uringUserData(fd, e.gen)}
	if e.emulatedEdge() || e.multi {
		sqe.len = uringPollAddMulti
	}
	if err := s.queueLocked(sqe); err != nil {
		return err
	}
	e.armed, e.mask = true, mask
	return nil
}

// disarmLocked queues the removal of e's request, if it has one. The
// caller made room for it (roomLocked), so it cannot fail.
func (s *uringSelector) disarmLocked(fd int, e *uringEntry) {
	if e.armed {
		s.ring.push(uringRemoval(uringUserData(fd, e.gen)))
		e.armed = false
	}
}

// queueLocked puts one SQE in the SQ, first submitting what is there if
// the SQ is full.
func (s *uringSelector) queueLocked(e uringSQE) error {
	if err := s.roomLocked(1); err != nil {
		return err
	}
	s.ring.push(e)
	return nil
}

// roomLocked makes sure n SQ slots are free, submitting the queue if not.
func (s *uringSelector) roomLocked(n uint32) error {
	if s.ring.sqSize-(s.ring.tail-atomic.LoadUint32(s.ring.sqHead)) >= n {
		return nil
	}
	if err := s.submitLocked(); err != nil {
		return err
	}
	if s.ring.sqSize-(s.ring.tail-atomic.LoadUint32(s.ring.sqHead)) < n {
		return os.NewSyscallError("io_uring_enter", unix.EAGAIN)
	}
	return nil
}

func (s *uringSelector) submitIfBlockedLocked() error {
	if s.blocked {
		s.nudgeDue = true
	}
	return nil // the next Select submits it
}

// unlockNudging unlocks mu and, if a change was queued while a Select is
// blocked, nudges it (after unlocking: the nudge takes closeMu, which
// Close takes before mu). The Select then submits the change from its own
// thread: io_uring runs a request's completion work on the thread that
// submitted it, so a request submitted by the Select's thread completes
// while that thread waits or looks, and a Select that looks right after
// the descriptor became ready sees it, as on epoll; submitted from another
// thread, its completion would wait for that thread to be scheduled.
func (s *uringSelector) unlockNudging() {
	nudge := s.nudgeDue
	s.nudgeDue = false
	s.mu.Unlock()
	if nudge {
		s.nudge()
	}
}

// submitLocked hands every queued SQE to the kernel, without waiting for
// anything. EBUSY and EAGAIN (the kernel is short of completion room or
// memory) leave the rest queued for the next Select, whose harvest makes
// room.
func (s *uringSelector) submitLocked() error {
	for {
		pending := s.ring.sqPending()
		if pending == 0 {
			return nil
		}
		n, errno := s.ring.enter(pending, 0, 0, nil, 0)
		switch {
		case errno == unix.EINTR:
			continue
		case errno == unix.EBUSY || errno == unix.EAGAIN:
			return nil
		case errno != 0:
			return os.NewSyscallError("io_uring_enter", errno)
		case n == 0:
			return nil
		}
	}
}

// uringRemoval is the POLL_REMOVE of the request with user_data ud; its
// own user_data is ud with uringRemoveBit, so that a removal the kernel
// answers with -EALREADY can be made again (harvest).
func uringRemoval(ud uint64) uringSQE {
	return uringSQE{opcode: uringOpPollRemove, fd: -1, addr: ud, userData: ud | uringRemoveBit}
}
