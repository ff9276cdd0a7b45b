//go:build darwin || freebsd || netbsd || openbsd || dragonfly

package sys

import (
	"os"
	"sync"
	"sync/atomic"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

func init() {
	backends[BackendKqueue] = openKqueue
}

const defaultBackend = BackendKqueue

// Keys in udata, and the garbage collector.
//
// The key travels through the kernel in each kevent's udata. On most of
// these systems x/sys declares udata as *byte, but a key is an integer, not a
// Go pointer: were the garbage collector or the stack copier to see it in a
// pointer-typed slot it could take it for a bad pointer and throw. So:
//   - every unix.Kevent_t this file writes a key into lives in memory
//     allocated as a pointer-free type (newKevents, or a [N]uint64 array
//     viewed through keventsIn), which the collector never scans, and
//   - udata is only ever stored and loaded as an integer of its own width
//     (setUdata, getUdata), never through the *byte field, and a Kevent_t is
//     only ever handled through a pointer, never copied into a typed
//     variable.
//
// Where udata is narrower than 64 bits (the 32-bit ports) it cannot carry a
// key; it carries the registration's tag instead, and Select maps (fd, tag)
// back to the key through the registration table.
const (
	keventWords   = (unsafe.Sizeof(unix.Kevent_t{}) + 7) / 8
	udataHoldsKey = unsafe.Sizeof(unix.Kevent_t{}.Udata) >= 8

	// maxChanges bounds the changes one Add, Modify or Delete submits:
	// delete and re-add of each of the two filters.
	maxChanges = 4

	// maxKqTimeout caps one kevent wait: darwin rejects very long timeouts
	// with EINVAL. Select waits again when the cap, not the deadline, ended
	// the wait.
	maxKqTimeout = 1e6 * time.Second
)

// Filter bits, for tracking which of a registration's filters fired.
const (
	kqRead uint8 = 1 << iota
	kqWrite
)

// newKevents returns n kevents in memory that the garbage collector does not
// scan.
func newKevents(n int) []unix.Kevent_t {
	raw := make([]uint64, uintptr(n)*keventWords)
	return keventsIn(raw, n)
}

// keventsIn views the pointer-free buffer raw as n kevents.
func keventsIn(raw []uint64, n int) []unix.Kevent_t {
	if uintptr(len(raw)) < uintptr(n)*keventWords {
		panic("sys: kevent buffer too small")
	}
	return unsafe.Slice((*unix.Kevent_t)(unsafe.Pointer(unsafe.SliceData(raw))), n)
}

func setUdata(k *unix.Kevent_t, v uint64) {
	p := unsafe.Pointer(&k.Udata)
	if unsafe.Sizeof(k.Udata) == 8 {
		*(*uint64)(p) = v
	} else {
		*(*uint32)(p) = uint32(v)
	}
}

func getUdata(k *unix.Kevent_t) uint64 {
	p := unsafe.Pointer(&k.Udata)
	if unsafe.Sizeof(k.Udata) == 8 {
		return *(*uint64)(p)
	}
	return uint64(*(*uint32)(p))
}

// setKevent fills a change. k must come from a pointer-free buffer and be
// zeroed, apart from what this sets.
func setKevent(k *unix.Kevent_t, ident, filter, flags int, udata uint64) {
	unix.SetKevent(k, ident, filter, flags)
	setUdata(k, udata)
}

// kqWaker is how Wake interrupts kevent: EVFILT_USER where the system has
// it (kqueue_user.go), a pipe otherwise (kqueue_pipe.go).
type kqWaker interface {
	// register adds the waker's filter to kq.
	register(kq int) error
	// isWaker reports whether a harvested kevent is the waker's.
	isWaker(k *unix.Kevent_t) bool
	// wake makes the waker's filter fire.
	wake(kq int) error
	// drain stops the waker's filter from firing again until the next wake.
	drain()
	close() error
}

// kqSelector is the kqueue backend.
//
// Each registration is up to two kernel filters on its descriptor:
// EVFILT_READ for Readable (EV_EOF on it is Hup) and EVFILT_WRITE for
// Writable. Edge adds EV_CLEAR and Oneshot EV_ONESHOT to both. Priority has
// no portable filter and is never reported.
//
// Invariants (mu guards regs and nextTag):
//   - regs holds every registration. Add, Modify and Delete hold mu while
//     they change the kernel's filters, so the table and the kernel change
//     in the same order; after the kernel change they bump epoch and stamp
//     the registration with it.
//   - Select loads epoch before each wait. A registration whose stamp is not
//     newer than that value was in the kernel, unchanged, before the wait
//     began, so an event harvested by the wait belongs to it.
//   - Oneshot: the kernel drops a oneshot filter once it fires, but the
//     registration's other filter stays armed. Select deletes it, under mu,
//     only when the registration passes the check above, so a concurrent
//     Modify that re-armed the descriptor is never undone. When the check
//     fails the leftover filter may fire once more; package poll suppresses
//     that second event.
type kqSelector struct {
	kq     int
	waker  kqWaker
	gate   wakeGate
	closed atomic.Bool
	epoch  atomic.Uint64
	waits  atomic.Uint64
	// closeMu keeps Close from closing the kqueue or the waker under a
	// Wake in flight, whose write could otherwise land in a descriptor
	// that reused the number. Add, Modify and Delete check closed under mu,
	// which Close also holds, for the same reason.
	closeMu sync.RWMutex

	mu      sync.Mutex
	regs    map[int]*kqReg
	nextTag uint32

	// Owned by the goroutine in Select.
	buf      []unix.Kevent_t // results, pointer-free memory
	changes  []unix.Kevent_t // oneshot clean-up, pointer-free memory
	receipts []unix.Kevent_t // its receipts, pointer-free memory
	fired    []kqFired       // per event filled: what fired
	merge    map[uint64]int  // key -> index in events, within one call
}

// kqReg is one registration.
type kqReg struct {
	key      uint64
	interest uint32 // Readable and Writable only: the bits with filters
	mode     Mode
	epoch    uint64 // value of kqSelector.epoch once it reached the kernel
	tag      uint32 // what udata holds where it cannot hold the key
}

// kqFired is what Select saw fire for one event it filled.
type kqFired struct {
	ident   int
	filters uint8
	oneshot bool
}

func openKqueue(Options) (Selector, error) {
	kq, err := unix.Kqueue()
	if err != nil {
		return nil, os.NewSyscallError("kqueue", err)
	}
	// A kqueue is not inherited across fork; close-on-exec is for form.
	unix.CloseOnExec(kq)
	w, err := newKqWaker()
	if err != nil {
		unix.Close(kq)
		return nil, err
	}
	if err := w.register(kq); err != nil {
		w.close()
		unix.Close(kq)
		return nil, err
	}
	return &kqSelector{
		kq:    kq,
		waker: w,
		regs:  make(map[int]*kqReg),
		merge: make(map[uint64]int),
	}, nil
}

func (s *kqSelector) Name() string { return BackendKqueue }

func kqFlags(mode Mode) int {
	f := unix.EV_ADD
	if mode&Edge != 0 {
		f |= unix.EV_CLEAR
	}
	if mode&Oneshot != 0 {
		f |= unix.EV_ONESHOT
	}
	return f
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

// changesFor writes into changes the kernel changes that turn registration
// prev (nil: none) into next (nil: none) on fd, and returns how many.
// A filter is deleted when it is no longer wanted or its mode changes (an
// EV_ADD on an existing filter updates udata but, on some systems, not
// EV_CLEAR or EV_ONESHOT); a wanted filter is (re-)added, which re-arms it
// and reports it at once if the descriptor is ready.
func changesFor(changes []unix.Kevent_t, fd int, prev, next *kqReg) int {
	n := 0
	for _, f := range [...]struct {
		bit    uint32
		filter int
	}{{Readable, unix.EVFILT_READ}, {Writable, unix.EVFILT_WRITE}} {
		had := prev != nil && prev.interest&f.bit != 0
		want := next != nil && next.interest&f.bit != 0
		if had && (!want || prev.mode != next.mode) {
			setKevent(&changes[n], fd, f.filter, unix.EV_DELETE, 0)
			n++
		}
		if want {
			setKevent(&changes[n], fd, f.filter, kqFlags(next.mode), next.udataOf())
			n++
		}
	}
	return n
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
		// Take back a filter that made it in before the failure.
		var raw2 [maxChanges * keventWords]uint64
		undo := keventsIn(raw2[:], maxChanges)
		_ = s.apply(undo[:changesFor(undo, fd, r, nil)])
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
	err := s.apply(changes[:n])
	// On failure the kernel may hold part of the change; the table records
	// what was asked for, so a later Modify or Delete cleans up after it.
	r.epoch = s.epoch.Add(1)
	s.regs[fd] = r
	if err != nil {
		return os.NewSyscallError("kevent(modify)", err)
	}
	return nil
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

// apply submits changes to the kernel and returns the first error that
// matters. Ignored: ENOENT when deleting a filter (the kernel drops a
// oneshot filter once it fires), and EPIPE when adding EVFILT_WRITE (older
// darwin reports it for a pipe whose reader is gone).
//
// With EV_RECEIPT every change yields one receipt, in order, in a receipts
// buffer exactly as long as the changes: the kernel writes no events there
// and does not wait, so one call applies them all. Without it (netbsd),
// each change goes alone, so that one ignorable failure does not stop the
// changes after it.
func (s *kqSelector) apply(changes []unix.Kevent_t) error {
	if len(changes) == 0 {
		return nil
	}
	if evReceipt == 0 {
		for i := range changes {
			err := ignoringEINTR(func() error {
				_, err := unix.Kevent(s.kq, changes[i:i+1], nil, nil)
				return err
			})
			if err != nil && !ignorableChangeError(&changes[i], err) {
				return err
			}
		}
		return nil
	}
	var raw [maxChanges * keventWords]uint64
	var receipts []unix.Kevent_t
	if len(changes) <= maxChanges {
		receipts = keventsIn(raw[:], len(changes))
	} else {
		receipts = s.receipts[:len(changes)] // Select's clean-up
	}
	return applyWithReceipts(s.kq, changes, receipts)
}

func applyWithReceipts(kq int, changes, receipts []unix.Kevent_t) error {
	for i := range changes {
		changes[i].Flags |= evReceipt
	}
	var zero unix.Timespec
	var n int
	err := ignoringEINTR(func() error {
		var err error
		n, err = unix.Kevent(kq, changes, receipts, &zero)
		return err
	})
	if err != nil {
		return err
	}
	for i := 0; i < n && i < len(changes); i++ {
		r := &receipts[i]
		if int(r.Flags)&unix.EV_ERROR == 0 || r.Data == 0 {
			continue
		}
		if err := unix.Errno(r.Data); !ignorableChangeError(&changes[i], err) {
			return err
		}
	}
	return nil
}

func ignorableChangeError(change *unix.Kevent_t, err error) bool {
	switch {
	case err == unix.ENOENT:
		return int(change.Flags)&unix.EV_DELETE != 0
	case err == unix.EPIPE:
		return int(change.Filter) == unix.EVFILT_WRITE && int(change.Flags)&unix.EV_ADD != 0
	}
	return false
}

// kqReady maps a harvested kevent to readiness bits and the filter that
// fired.
func kqReady(k *unix.Kevent_t) (uint32, uint8) {
	var ready uint32
	var filter uint8
	switch int(k.Filter) {
	case unix.EVFILT_READ:
		ready, filter = Readable, kqRead
	case unix.EVFILT_WRITE:
		ready, filter = Writable, kqWrite
	}
	flags := int(k.Flags)
	if flags&unix.EV_ERROR != 0 {
		return Error, filter
	}
	if flags&unix.EV_EOF != 0 {
		ready |= Hup
		if k.Fflags != 0 { // the socket's pending error
			ready |= Error
		}
	}
	return ready, filter
}

func (s *kqSelector) Select(events []Event, timeout time.Duration) (int, bool, error) {
	// Read and write filters of one key merge into one event, so asking the
	// kernel for len(events) kevents never harvests more than fits.
	if len(events) == 0 {
		return 0, false, ErrEmptyBuffer
	}
	if s.closed.Load() {
		return 0, false, ErrClosed
	}
	if len(s.buf) < len(events) {
		s.buf = newKevents(len(events))
		// At most two clean-up deletions per event: see disarmRest.
		s.changes = newKevents(2 * len(events))
		s.receipts = newKevents(2 * len(events))
		s.fired = make([]kqFired, len(events))
	}
	buf := s.buf[:len(events)]
	dl := newDeadline(timeout)
	for {
		seen := s.epoch.Load()
		wait := dl.remaining()
		if wait > maxKqTimeout {
			wait = maxKqTimeout
		}
		n, err := s.wait(buf, wait)
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			return 0, false, os.NewSyscallError("kevent", err)
		}
		out, woken, oneshots := s.collect(events, buf[:n])
		if woken {
			// Drain before reset, as in pollSelector: a pipe waker
			// drained after the reset could swallow a write the gate
			// still counts as pending, and every later Wake would be
			// lost. (EVFILT_USER has nothing to drain.)
			s.waker.drain()
			s.gate.reset()
		}
		if oneshots {
			s.disarmRest(out, seen)
		}
		// Wait again, with the time left, when the cap ended the wait or
		// every event harvested was stale.
		if out > 0 || woken || dl.remaining() == 0 {
			return out, woken, nil
		}
	}
}

func (s *kqSelector) wait(buf []unix.Kevent_t, timeout time.Duration) (int, error) {
	s.waits.Add(1)
	if timeout < 0 {
		return unix.Kevent(s.kq, nil, buf, nil)
	}
	ts := unix.NsecToTimespec(int64(timeout))
	return unix.Kevent(s.kq, nil, buf, &ts)
}

// collect turns harvested kevents into events, merging the filters of one
// key, and records in s.fired what fired for each event.
func (s *kqSelector) collect(events []Event, harvested []unix.Kevent_t) (out int, woken, oneshots bool) {
	if !udataHoldsKey && len(harvested) > 0 {
		s.mu.Lock()
		defer s.mu.Unlock()
	}
	merging := len(harvested) > 1
	for i := range harvested {
		k := &harvested[i]
		if s.waker.isWaker(k) {
			woken = true
			continue
		}
		ident := int(k.Ident)
		var key uint64
		if udataHoldsKey {
			key = getUdata(k)
		} else {
			r, ok := s.regs[ident]
			if !ok || uint64(r.tag) != getUdata(k) {
				continue // deleted or modified since the kernel queued it
			}
			key = r.key
		}
		ready, filter := kqReady(k)
		j := out
		if merging {
			if at, ok := s.merge[key]; ok {
				j = at
			} else {
				s.merge[key] = out
			}
		}
		if j == out {
			events[out] = Event{Key: key}
			s.fired[out] = kqFired{ident: ident}
			out++
		}
		events[j].Ready |= ready
		s.fired[j].filters |= filter
		if int(k.Flags)&unix.EV_ONESHOT != 0 {
			s.fired[j].oneshot = true
			oneshots = true
		}
	}
	if merging {
		for i := 0; i < out; i++ {
			delete(s.merge, events[i].Key)
		}
	}
	return out, woken, oneshots
}

// disarmRest deletes the filter that did not fire of each oneshot
// registration reported by the last wait (the kernel dropped the one that
// did), provided the registration has not changed since before the wait.
// Failures are ignored: the leftover filter can at worst fire once more.
func (s *kqSelector) disarmRest(out int, seen uint64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := 0
	for j := 0; j < out; j++ {
		f := &s.fired[j]
		if !f.oneshot {
			continue
		}
		r, ok := s.regs[f.ident]
		if !ok || r.epoch > seen || r.mode&Oneshot == 0 {
			continue
		}
		if r.interest&Readable != 0 && f.filters&kqRead == 0 {
			setKevent(&s.changes[n], f.ident, unix.EVFILT_READ, unix.EV_DELETE, 0)
			n++
		}
		if r.interest&Writable != 0 && f.filters&kqWrite == 0 {
			setKevent(&s.changes[n], f.ident, unix.EVFILT_WRITE, unix.EV_DELETE, 0)
			n++
		}
		r.interest = 0 // its filters are all gone now
	}
	_ = s.apply(s.changes[:n])
}

func (s *kqSelector) Wake() error {
	if s.closed.Load() {
		return nil
	}
	if !s.gate.begin() {
		return nil
	}
	s.closeMu.RLock()
	defer s.closeMu.RUnlock()
	if s.closed.Load() {
		return nil
	}
	if err := s.waker.wake(s.kq); err != nil {
		s.gate.reset() // the write failed: let a later Wake retry
		return err
	}
	return nil
}

// Rearm does nothing: EV_CLEAR makes each new arrival an edge by itself.
func (s *kqSelector) Rearm(int, uint32) error {
	if s.closed.Load() {
		return ErrClosed
	}
	return nil
}

func (s *kqSelector) Traits() Traits { return Traits{NativeEdge: true} }

func (s *kqSelector) Counters() Counters {
	return Counters{WakerWrites: s.gate.writes.Load(), Waits: s.waits.Load()}
}

func (s *kqSelector) Close() error {
	s.closeMu.Lock()
	defer s.closeMu.Unlock()
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed.Swap(true) {
		return nil
	}
	err1 := s.waker.close()
	err2 := unix.Close(s.kq)
	if err1 != nil {
		return err1
	}
	if err2 != nil {
		return os.NewSyscallError("close(kqueue)", err2)
	}
	return nil
}
