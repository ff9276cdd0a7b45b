//go:build darwin || freebsd || netbsd || openbsd || dragonfly

package sys

import (
	"errors"
	"os"
	"sync"
	"sync/atomic"

	"golang.org/x/sys/unix"
)

func init() {
	backends[BackendKqueue] = openKqueue
}

const defaultBackend = BackendKqueue

// kqSelector is the kqueue backend.
//
// Each registration is up to two kernel filters on its descriptor:
// EVFILT_READ for Readable (EV_EOF on it is Hup) and EVFILT_WRITE for
// Writable. Edge adds EV_CLEAR and Oneshot EV_ONESHOT to both. Priority has
// no portable filter and is never reported; nor is a hang-up or error of a
// registration whose interest has neither Readable nor Writable, since it
// has no filter to carry EV_EOF.
//
// One concept per file:
//   - kqueue_kevent_bsd.go: kevents in pointer-free memory, keys in udata;
//   - kqueue_reg_bsd.go: the registration table and its epochs (Add,
//     Modify, Delete);
//   - kqueue_change_bsd.go: turning a registration change into kernel
//     changes and submitting them (kqueue_change_receipt.go,
//     kqueue_change_netbsd.go: with EV_RECEIPT or one at a time);
//   - kqueue_select_bsd.go: Select, merging filters, oneshot;
//   - kqueue_waker_bsd.go: how Wake interrupts kevent (kqueue_waker_user.go:
//     EVFILT_USER; kqueue_waker_pipe.go: a pipe);
//   - this file: the selector, opening, Wake and Close.
//
// Invariants (mu guards regs and nextTag):
//   - regs holds every registration. Add, Modify and Delete hold mu while
//     they change the kernel's filters, so the table and the kernel change
//     in the same order; after the kernel change they bump epoch and stamp
//     the registration with it.
//   - Select loads epoch before each wait. A registration whose stamp is not
//     newer than that value was in the kernel, unchanged, before the wait
//     began, so an event harvested by the wait belongs to it.
//   - Oneshot: a oneshot registration makes one event, whichever of its
//     filters fire and however many times, until Modify replaces it. The
//     kernel drops a oneshot filter once it fires, but the other filter
//     stays armed, and a filter re-added by a Modify during the wait may
//     fire too. So Select looks up each oneshot kevent in regs, under mu:
//     it makes an event only for the current registration with the key it
//     carries, and only once (kqReg.spent); in the same hold of mu it
//     deletes the filters the registration has left, so a concurrent
//     Modify, which installs a new registration, is never undone. The
//     contract holds here, without help from package poll.
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
	harvest  []kqHarvest     // per event filled: what the harvest saw
	merge    map[uint64]int  // key -> index in events, within one call
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

func (s *kqSelector) Wake() error {
	if s.closed.Load() {
		return nil
	}
	if !s.gate.begin() {
		return nil
	}
	return s.gate.write(&s.closeMu, &s.closed, func() error { return s.waker.wake(s.kq) })
}

// Drained does nothing: EV_CLEAR makes each new arrival an edge by itself.
func (s *kqSelector) Drained(int, uint32) error {
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
	err := s.waker.close()
	if cerr := unix.Close(s.kq); cerr != nil {
		err = errors.Join(err, os.NewSyscallError("close(kqueue)", cerr))
	}
	return err
}
