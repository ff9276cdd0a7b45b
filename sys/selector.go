package sys

import (
	"errors"
	"fmt"
	"os"
	"time"
)

// Readiness bits shared by every selector. Package poll's Ready uses the same
// values, so converting between the two is free.
const (
	Readable uint32 = 1 << iota
	Writable
	Error
	Hup
	Priority

	// AllReady is the union of every readiness bit.
	AllReady = Readable | Writable | Error | Hup | Priority
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
)

// EnvBackend is the environment variable that chooses the default backend
// ("epoll", "kqueue" or "poll") when a caller asks for none. The test suite
// uses it to run everything on each backend the machine has.
const EnvBackend = "UNIPOLL_BACKEND"

// ErrUnknownBackend is returned by New for a backend name this build does
// not know or this operating system does not have.
var ErrUnknownBackend = errors.New("sys: unknown or unsupported backend")

// Selector is the contract every OS readiness mechanism implements.
//
// Add, Modify and Delete may be called from any goroutine, also while another
// goroutine is blocked in Select; the change takes effect at once. Every
// backend fails the same way: Add of a registered fd with EEXIST, Modify or
// Delete of an unknown fd with ENOENT, a bad fd with EBADF (or EPERM for a
// kind the kernel cannot watch). Delete an fd before closing it: epoll
// forgets a closed fd by itself, poll(2) and kqueue keep their entry. Select is
// called by one goroutine at a time. Close must not race with Select: the
// caller wakes the selecting goroutine and waits for it to leave first.
type Selector interface {
	// Add registers fd with key, interest (readiness bits) and mode.
	Add(fd int, key uint64, interest uint32, mode Mode) error
	// Modify changes the key, interest and mode of a registered fd and
	// re-arms a oneshot registration.
	Modify(fd int, key uint64, interest uint32, mode Mode) error
	// Delete removes fd. It does not close it.
	Delete(fd int) error
	// Select waits up to timeout (negative: forever; zero: do not block) and
	// fills events. It returns the number filled and whether the Waker
	// interrupted the wait. A wake-up is not an event.
	Select(events []Event, timeout time.Duration) (n int, woken bool, err error)
	// Wake interrupts a Select in progress, or makes the next one return at
	// once. Calls made while a wake-up is already pending cost nothing.
	Wake() error
	// WakerWrites reports how many times Wake actually wrote to the kernel.
	WakerWrites() uint64
	// Name is the backend name, one of the Backend constants.
	Name() string
	// Close releases the selector's descriptors.
	Close() error
}

// New opens a selector. An empty backend means the value of UNIPOLL_BACKEND,
// or the best one this OS has when that is unset.
func New(backend string) (Selector, error) {
	if backend == "" {
		backend = os.Getenv(EnvBackend)
	}
	if backend == "" {
		backend = defaultBackend
	}
	open, ok := backends[backend]
	if !ok {
		return nil, fmt.Errorf("%w: %q (this build has %v)", ErrUnknownBackend, backend, Backends())
	}
	return open()
}

// Backends lists the backend names this build supports, best first.
func Backends() []string {
	out := make([]string, 0, len(backendOrder))
	for _, name := range backendOrder {
		if _, ok := backends[name]; ok {
			out = append(out, name)
		}
	}
	return out
}

var backendOrder = []string{BackendEpoll, BackendKqueue, BackendPoll}

// backends is filled by the platform files' init functions.
var backends = map[string]func() (Selector, error){}

// errEmptyBuffer guards the one misuse that could lose events: asking the
// kernel for events with nowhere to put them.
var errEmptyBuffer = errors.New("sys: Select needs room for at least one event")
