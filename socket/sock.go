//go:build unix

package socket

import (
	"os"

	"github.com/unipoll/unipoll/internal/onpoll/fdguard"
)

// sock is the descriptor and its guard, shared by every socket type: an
// fdguard.Guard (internal/onpoll/fdguard, which states its invariants), its
// errors named as the socket package's. A nil *sock (what a nil socket
// pointer hands its functions, see sockOf) is a socket never opened, and
// every function of sock_io.go accepts one.
type sock = fdguard.Guard[sockNames]

// sockNames names a sock's errors: stateError for a socket that is not
// open (matching ErrNotOpen, ErrClosed and poll.ErrClosed), "socket: op:
// err" for a failure.
type sockNames struct{}

func (sockNames) NotOpen(op string) error         { return notOpenError(op) }
func (sockNames) Closed(op string) error          { return closedError(op) }
func (sockNames) Wrap(op string, err error) error { return opError(op, "", err) }
func (sockNames) Sys(op string, err error) error  { return os.NewSyscallError(op, err) }

func newSock(fd int) sock { return fdguard.Opened(fd, sockNames{}) }
