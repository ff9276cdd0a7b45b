//go:build unix

package socket

import (
	"errors"
	"fmt"
	"net"

	"golang.org/x/sys/unix"

	"github.com/unipoll/unipoll/poll"
)

// Errors returned by this package; match them with errors.Is.
//
// Every one but ErrWouldBlock comes wrapped with what failed, and that
// wrapping names the package once: "socket: dial tcp example.org:80:
// address needs name resolution: host "example.org" is not an IP
// address". So their own text has no "socket:" of its own (as the closed
// sentinel, net.ErrClosed, has none).
//
// Which closed sentinel comes from where: an operation on a socket that is
// closed (or was never opened) fails with an error matching both ErrClosed
// (net.ErrClosed) and poll.ErrClosed, whether it is called on the socket or
// through Poll.Register, Reregister or Deregister, so either check works. A
// closed Poll is another matter: registering an open socket with it fails
// with poll.ErrClosed alone, because the socket itself is still usable.
var (
	// ErrClosed is returned, wrapped with the operation, by every operation
	// on a socket after Close, including a second Close. It is
	// net.ErrClosed, so callers that already test for the net package's
	// sentinel need no change; the same errors match poll.ErrClosed too.
	ErrClosed = net.ErrClosed

	// ErrNotOpen is returned, wrapped with the operation, by every method of
	// a socket that was never opened: a zero value (TCPConn{}) or a nil
	// pointer. Such an error matches ErrClosed and poll.ErrClosed as well,
	// so code that handles a closed socket handles this one too; ErrNotOpen
	// tells the two apart. A zero socket never touches a descriptor (not
	// even 0, stdin).
	ErrNotOpen = errors.New("not open")

	// ErrWouldBlock is returned, unwrapped, when a non-blocking operation
	// cannot proceed yet: wait for the next Readable (or Writable) event and
	// try again. errors.Is(ErrWouldBlock, unix.EAGAIN) is true as well.
	ErrWouldBlock error = wouldBlock{}

	// ErrInvalidNetwork is returned for a network name the constructor does
	// not accept, or an address of the wrong family for the network.
	ErrInvalidNetwork = errors.New("invalid network")

	// ErrInvalidAddr is returned for an address that is malformed (no port,
	// a port out of range) or of the wrong type, such as a *net.TCPAddr
	// given to (*UDPConn).WriteTo.
	ErrInvalidAddr = errors.New("invalid address")

	// ErrNeedsResolve is returned by DialTCP, ListenTCP, DialUDP and
	// ListenUDP for an address whose host is a name rather than an IP
	// literal, or whose port is a service name ("http"): looking either up
	// can block for seconds, which an event loop must not do. No socket is
	// opened. Resolve the name off the loop and pass the addresses; see
	// DialTCP.
	ErrNeedsResolve = errors.New("address needs name resolution")

	// ErrWrongSocketType is returned when adopting a descriptor that is not
	// a socket of the family and type asked for (a listening socket given to
	// AdoptTCPConn, a datagram socket given to AdoptTCPListener, ...).
	ErrWrongSocketType = errors.New("wrong socket type")
)

// wouldBlock is ErrWouldBlock's type. It is a comparable zero-size value so
// that returning it allocates nothing, and it unwraps to EAGAIN so that code
// written against the raw errno still recognises it. EWOULDBLOCK equals
// EAGAIN on every unix Go supports.
type wouldBlock struct{}

func (wouldBlock) Error() string { return "socket: operation would block" }

// Unwrap makes errors.Is(ErrWouldBlock, unix.EAGAIN) true.
func (wouldBlock) Unwrap() error { return unix.EAGAIN }

// Timeout reports true, like EAGAIN itself, for callers that test the
// net.Error interface.
func (wouldBlock) Timeout() bool { return true }

// stateError is the error of an operation on a socket that is not open:
// closed, or never opened. It matches ErrClosed and poll.ErrClosed (so one
// check works whichever package the caller thinks of), and ErrNotOpen when
// the socket was never opened. Not on any hot path: a socket that is not
// open has nothing fast left to do.
type stateError struct {
	op      string
	notOpen bool
}

func (e *stateError) Error() string {
	if e.notOpen {
		return "socket: " + e.op + ": " + ErrNotOpen.Error()
	}
	return "socket: " + e.op + ": " + ErrClosed.Error()
}

// Is matches the sentinels listed on stateError.
func (e *stateError) Is(target error) bool {
	return target == ErrClosed || target == poll.ErrClosed || (e.notOpen && target == ErrNotOpen)
}

// closedError is the error of op on a closed socket.
func closedError(op string) error { return &stateError{op: op} }

// notOpenError is the error of op on a socket that was never opened.
func notOpenError(op string) error { return &stateError{op: op, notOpen: true} }

// opError wraps err with the operation and, when known, the address.
func opError(op, addr string, err error) error {
	if addr == "" {
		return fmt.Errorf("socket: %s: %w", op, err)
	}
	return fmt.Errorf("socket: %s %s: %w", op, addr, err)
}
