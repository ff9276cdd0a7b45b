package sys

import (
	"errors"
	"fmt"
	"time"

	"golang.org/x/sys/unix"
)

// Readiness bits shared by every selector. Package poll's Ready uses the same
// values, so converting between the two is free.
const (
	Readable uint32 = 1 << iota
	Writable
	Error
	Hup
	Priority
)

// Mode is a trigger mode, a bit set of Edge, Level and Oneshot.
type Mode uint8

// Trigger modes. Exactly one of Edge and Level is set; Oneshot may be added.
const (
	Edge Mode = 1 << iota
	Level
	Oneshot
)

// Event is one readiness notification: the key given at registration and the
// readiness bits the kernel reported (not yet masked by interest).
type Event struct {
	Key   uint64
	Ready uint32
}

// Backend names accepted by New.
const (
	BackendEpoll  = "epoll"
	BackendKqueue = "kqueue"
	BackendPoll   = "poll"
	// BackendUring is io_uring (Linux 5.13 or later): a poll request per
	// descriptor in a ring shared with the kernel. It is never the default;
	// where the kernel lacks or refuses io_uring, New fails with
	// ErrBackendUnavailable and Backends leaves it out. Its first Select
	// locks the calling goroutine to its OS thread for good (the kernel
	// completes a request on the thread that submitted it; see
	// uring_linux.go, "Threads"). With Options.Completion it also does
	// the I/O of the stream sockets added with AddStream (Linux 5.19 or
	// later; on older kernels AddStream is Add): see Stream. Its Close
	// returns once the kernel has torn the ring down, or after 100 ms at
	// most: about 20 ms on Linux 6.18 (uring_owner_linux.go says why it
	// waits). Opening and closing a ring per short task is slow.
	BackendUring = "uring"
)

// EnvBackend is the environment variable that package poll reads to choose
// a backend ("epoll", "kqueue", "poll" or "uring") when its caller asks for none. The
// test suite uses it to run everything on each backend the machine has.
// Package sys itself never reads it: New takes the name it is given.
const EnvBackend = "UNIPOLL_BACKEND"

// ReservedKey is the one key value a caller must never register: a selector
// may use it for its own waker (epoll does). Add and Modify refuse it with
// EINVAL.
const ReservedKey = ^uint64(0)

// Errors every selector returns the same way; match them with errors.Is.
var (
	// ErrUnknownBackend is returned by New for a backend name this build
	// does not know or this operating system does not have.
	ErrUnknownBackend = errors.New("sys: unknown or unsupported backend")
	// ErrBackendUnavailable is returned by New for a backend this build has
	// but the running kernel lacks or refuses: io_uring on a kernel older
	// than 5.13, or disabled (sysctl kernel.io_uring_disabled), or blocked
	// by a seccomp filter. The system error is in the chain too.
	ErrBackendUnavailable = errors.New("sys: backend unavailable on this kernel")
	// ErrUnknownWait is returned by NewWithOptions for a wait mode other
	// than WaitLook, WaitBlock and WaitPark.
	ErrUnknownWait = errors.New("sys: unknown wait mode")
	// ErrClosed is returned by every method of a selector after Close
	// (Close itself returns nil again; Wake does nothing).
	ErrClosed = errors.New("sys: selector closed")
	// ErrEmptyBuffer is returned by Select when events has no room: the
	// kernel would have nowhere to put what it harvests.
	ErrEmptyBuffer = errors.New("sys: Select needs room for at least one event")
)

// Traits tells how a backend meets the contract where kernels differ, so
// that callers and tests ask instead of knowing.
type Traits struct {
	// NativeEdge: the kernel triggers edges itself (epoll, kqueue), and
	// Drained does nothing. Without it, Edge is emulated: once a condition is
	// reported, it leaves the kernel's view until Drained or Modify.
	NativeEdge bool
	// RestLatency is the longest a new condition (an error after a
	// hang-up) on a descriptor that rests after a lasting hang-up or error
	// may go unseen. Zero where nothing ever rests.
	RestLatency time.Duration
}

// Counters are a selector's running totals.
type Counters struct {
	// WakerWrites is how many times Wake (or an internal nudge) wrote to
	// the kernel; coalescing keeps it far below the number of Wake calls.
	WakerWrites uint64
	// Waits is how many times Select entered the kernel to wait or look
	// (epoll_wait, poll, kevent), retries included.
	Waits uint64
}

// Selector is the contract every OS readiness mechanism implements.
//
// Keys: a key is the caller's; it is stored with the descriptor and handed
// back with each event. ReservedKey is refused.
//
// Concurrency: Add, Modify, Delete and Drained may be called from any
// goroutine, also while another goroutine is blocked in Select; the change
// takes effect at once (a blocked Select that must see it is woken
// internally, without reporting woken). Select is called by one goroutine
// at a time. Close must not race with Select: the caller wakes the
// selecting goroutine and waits for it to leave first.
//
// Errors, the same on every backend: Add of a registered descriptor fails
// with EEXIST; Modify or Delete of a descriptor that is open but not
// registered with ENOENT; Add, Modify or Delete of a descriptor that is not
// open with EBADF (Delete of a registered descriptor that has been closed
// also removes it); Drained answers ENOENT and EBADF the same way only where
// edge is emulated, and checks nothing where it is native (see Drained); a
// descriptor the kernel refuses to watch (epoll: a regular file) fails with
// EPERM; every method after Close with ErrClosed. Delete a descriptor
// before closing it.
//
// Modes mean the same everywhere:
//   - Level: an event on every Select while the descriptor is ready.
//   - Edge: an event when new readiness arrives, and not again for it while
//     it lasts. Where the kernel triggers edges itself that is all; where
//     it cannot (poll(2), see Traits.NativeEdge), a reported condition
//     leaves the kernel's view until Drained is called for it (the caller's
//     operation returned EAGAIN) or Modify re-arms the registration, so an
//     edge is reported once, not on every Select, and none is lost by a
//     caller that re-arms after EAGAIN.
//   - Oneshot: after one event the descriptor is disarmed until Modify;
//     no second event is reported for it, whichever filter fired.
//   - A hang-up or error is reported whatever the interest (on kqueue, by
//     the filter of Readable or Writable, so only when the interest has one
//     of them). Under Edge it is reported once; a descriptor whose only
//     readiness is such a lasting condition already reported may rest out
//     of the kernel's view, and is looked at again within
//     Traits.RestLatency. What to do with a lasting condition the caller
//     did not ask for is the caller's policy (package poll parks such a
//     registration in Edge, see ARCHITECTURE.md), not the selector's.
type Selector interface {
	// Add registers fd with key, interest (readiness bits) and mode.
	Add(fd int, key uint64, interest uint32, mode Mode) error
	// Modify changes the key, interest and mode of a registered fd, and
	// re-arms it: a oneshot registration, and every condition an emulated
	// edge has reported. A Modify that fails leaves the registration as it
	// was, key included (where the kernel took part of the change, the
	// selector takes it back), so the caller may keep its old key.
	Modify(fd int, key uint64, interest uint32, mode Mode) error
	// Delete removes fd. It does not close it.
	Delete(fd int) error
	// Drained tells the selector that an operation on fd for the readiness
	// in ready has returned EAGAIN, so an emulated edge watches that
	// condition again. Where edges are native it does nothing and checks
	// nothing (only ErrClosed), so that callers may call it after every
	// EAGAIN.
	Drained(fd int, ready uint32) error
	// Select waits up to timeout (negative: forever; zero: do not block) and
	// fills events. It returns the number filled and whether Wake
	// interrupted the wait. A wake-up is not an event.
	Select(events []Event, timeout time.Duration) (n int, woken bool, err error)
	// Wake interrupts a Select in progress, or makes the next one return at
	// once. Calls made while a wake-up is already pending cost nothing.
	Wake() error
	// Counters returns the running totals. Safe from any goroutine, also
	// after Close.
	Counters() Counters
	// Traits describes the backend; it never changes.
	Traits() Traits
	// Name is the backend name, one of the Backend constants.
	Name() string
	// Close releases the selector's descriptors.
	Close() error
}

// Wait modes of an epoll Select that may block (Options.Wait).
const (
	// WaitLook looks with a non-blocking epoll_wait first and blocks only
	// if that finds nothing: the default.
	WaitLook = "look"
	// WaitBlock blocks in epoll_wait at once.
	WaitBlock = "block"
	// WaitPark looks first, then parks the goroutine on the Go runtime's
	// netpoller with the epoll descriptor as a pollable file: a waiting
	// Poll holds no thread. Experimental.
	WaitPark = "park"
)

// Options tune a selector. The zero Options are the defaults.
type Options struct {
	// Wait is how an epoll Select that may block waits: WaitLook (the
	// default; a non-blocking look first, block only if it finds nothing),
	// WaitBlock or WaitPark (see epoll_wait_linux.go). Other backends
	// ignore it. Empty means the default.
	Wait string
	// Completion makes the io_uring backend do the I/O of the stream
	// sockets added with AddStream (StreamSelector): receives into
	// buffers it owns, sends from a queue, both with its waits. Other
	// backends ignore it (their AddStream is Add).
	Completion bool
}

// New opens a selector with the default Options. An empty backend means
// the best one this OS has.
func New(backend string) (Selector, error) { return NewWithOptions(backend, Options{}) }

// NewWithOptions opens a selector tuned by o. An unknown backend is
// ErrUnknownBackend, one the kernel lacks or refuses ErrBackendUnavailable,
// an unknown wait mode ErrUnknownWait.
func NewWithOptions(backend string, o Options) (Selector, error) {
	if backend == "" {
		backend = defaultBackend
	}
	open, ok := backends[backend]
	if !ok {
		return nil, fmt.Errorf("%w: %q (this build has %v)", ErrUnknownBackend, backend, Backends())
	}
	switch o.Wait {
	case "":
		o.Wait = WaitLook
	case WaitLook, WaitBlock, WaitPark:
	default:
		return nil, fmt.Errorf("%w: %q (want %q, %q or %q)", ErrUnknownWait, o.Wait, WaitLook, WaitBlock, WaitPark)
	}
	return open(o)
}

// Backends lists the backend names this build supports and the running
// kernel allows, best first (the default first).
func Backends() []string {
	out := make([]string, 0, len(backendOrder))
	for _, name := range backendOrder {
		if _, ok := backends[name]; !ok {
			continue
		}
		if usable, ok := backendUsable[name]; ok && !usable() {
			continue
		}
		out = append(out, name)
	}
	return out
}

var backendOrder = []string{BackendEpoll, BackendKqueue, BackendUring, BackendPoll}

// backends is filled by the platform files' init functions.
var backends = map[string]func(Options) (Selector, error){}

// backendUsable holds, for a backend the kernel may refuse, the probe that
// says whether it allows it here (cached by the probe).
var backendUsable = map[string]func() bool{}

// checkKey refuses ReservedKey.
func checkKey(key uint64) error {
	if key == ReservedKey {
		return unix.EINVAL
	}
	return nil
}
