//go:build unix

package socket

import (
	"errors"
	"fmt"
	"net"

	"golang.org/x/sys/unix"
)

// Errors returned by this package; match them with errors.Is.
var (
	// ErrClosed is returned, wrapped with the operation, by every operation
	// on a socket after Close, including a second Close. It is
	// net.ErrClosed, so callers that already test for the net package's
	// sentinel need no change.
	ErrClosed = net.ErrClosed

	// ErrWouldBlock is returned, unwrapped, when a non-blocking operation
	// cannot proceed yet: wait for the next Readable (or Writable) event and
	// try again. errors.Is(ErrWouldBlock, unix.EAGAIN) is true as well.
	ErrWouldBlock error = wouldBlock{}

	// ErrInvalidNetwork is returned for a network name the constructor does
	// not accept, or an address of the wrong family for the network.
	ErrInvalidNetwork = errors.New("socket: invalid network")

	// ErrInvalidAddr is returned for an address of the wrong type, such as a
	// *net.TCPAddr given to (*UDPConn).WriteTo.
	ErrInvalidAddr = errors.New("socket: invalid address")

	// ErrWrongSocketType is returned when adopting a descriptor that is not
	// a socket of the family and type asked for (a listening socket given to
	// AdoptTCPConn, a datagram socket given to AdoptTCPListener, ...).
	ErrWrongSocketType = errors.New("socket: wrong socket type")
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

// closedError wraps ErrClosed with the operation that found the socket
// closed. Not on any hot path: a closed socket has nothing fast left to do.
func closedError(op string) error { return fmt.Errorf("socket: %s: %w", op, ErrClosed) }

// opError wraps err with the operation and, when known, the address.
func opError(op, addr string, err error) error {
	if addr == "" {
		return fmt.Errorf("socket: %s: %w", op, err)
	}
	return fmt.Errorf("socket: %s %s: %w", op, addr, err)
}
