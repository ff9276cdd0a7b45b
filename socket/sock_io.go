//go:build unix

package socket

import (
	"io"
	"net/netip"
	"os"

	"golang.org/x/sys/unix"

	"github.com/unipoll/unipoll/poll"
)

// The I/O helpers below hold the read lock for one system call (or one
// short retry loop), retry EINTR, which the Go runtime's signals make
// routine, and turn EAGAIN into the unwrapped ErrWouldBlock. Where a call
// ends an edge-triggered pass they tell the Poll (Drained) before
// returning (fdguard.Guard, invariant 5): EAGAIN from every operation, and
// a short read from a stream.

// noNegative makes the count of a failed call 0 (x/sys/unix passes on
// read(2)'s -1), as the raw calls of sysRead and sysWrite count it.
func noNegative(n int, err error) (int, error) {
	if err != nil {
		return 0, err
	}
	return n, nil
}

// readStream reads from a stream socket: zero bytes into a non-empty buffer
// is the peer's orderly shutdown, io.EOF.
func readStream(s *sock, b []byte) (int, error) {
	if len(b) == 0 {
		// Like package net: nothing to read into is not EOF.
		if err := s.RLock("read"); err != nil {
			return 0, err
		}
		s.RUnlock()
		return 0, nil
	}
	return readAny(s, b, true)
}

// readAny is one read; for a stream, zero bytes is EOF.
//
// A stream read that returns less than len(b) found the receive queue
// empty, so later data makes a new edge and the caller may stop its pass
// there; under Edge it calls Drained. Not at EOF, which lasts (ending the
// pass would make the hang-up an edge on every Poll), and not for a
// datagram, where one read is one datagram whatever its size.
func readAny(s *sock, b []byte, stream bool) (int, error) {
	if err := s.RLock("read"); err != nil {
		return 0, err
	}
	defer s.RUnlock()
	st := s.Stream()
	for {
		var n int
		var err error
		if st != nil && stream {
			n, err = st.Read(b)
		} else {
			n, err = sysRead(s.Fd(), b)
		}
		switch {
		case err == nil && n == 0 && stream:
			return 0, io.EOF
		case err == nil:
			if stream && n < len(b) && s.Edge() {
				if rerr := s.Drained("read", poll.Readable); rerr != nil {
					return n, rerr
				}
			}
			return n, nil
		case err == unix.EINTR:
			continue
		case err == unix.EAGAIN:
			if s.Edge() {
				if rerr := s.Drained("read", poll.Readable); rerr != nil {
					return 0, rerr
				}
			}
			return 0, ErrWouldBlock
		default:
			return 0, os.NewSyscallError("read", err)
		}
	}
}

// readDatagram reads one datagram; zero bytes is an empty datagram, not EOF.
func readDatagram(s *sock, b []byte) (int, error) { return readAny(s, b, false) }

// write writes all of b, or as much as the socket takes before it would
// block: then it returns the count and ErrWouldBlock, as io.Writer requires
// an error for a short write. The rest is for the caller to keep and send on
// the next Writable event.
func write(s *sock, b []byte) (int, error) {
	if err := s.RLock("write"); err != nil {
		return 0, err
	}
	defer s.RUnlock()
	n := 0
	st := s.Stream()
	for {
		var m int
		var err error
		if st != nil {
			m, err = st.Write(b[n:])
		} else {
			m, err = sysWrite(s.Fd(), b[n:])
		}
		if m > 0 {
			n += m
		}
		switch {
		case err == nil && n == len(b):
			return n, nil
		case err == nil:
			continue
		case err == unix.EINTR:
			continue
		case err == unix.EAGAIN:
			if s.Edge() {
				if rerr := s.Drained("write", poll.Writable); rerr != nil {
					return n, rerr
				}
			}
			return n, ErrWouldBlock
		default:
			return n, os.NewSyscallError("write", err)
		}
	}
}

// recvfrom reads one datagram and its source address.
func recvfrom(s *sock, b []byte) (int, unix.Sockaddr, error) {
	if err := s.RLock("read"); err != nil {
		return 0, nil, err
	}
	defer s.RUnlock()
	for {
		n, from, err := unix.Recvfrom(s.Fd(), b, 0)
		switch {
		case err == nil:
			return n, from, nil
		case err == unix.EINTR:
			continue
		case err == unix.EAGAIN:
			if s.Edge() {
				if rerr := s.Drained("read", poll.Readable); rerr != nil {
					return 0, nil, rerr
				}
			}
			return 0, nil, ErrWouldBlock
		default:
			return 0, nil, os.NewSyscallError("recvfrom", err)
		}
	}
}

// sendto sends one datagram to sa. A datagram goes whole or not at all.
func sendto(s *sock, b []byte, sa unix.Sockaddr) error {
	if err := s.RLock("write"); err != nil {
		return err
	}
	defer s.RUnlock()
	for {
		err := unix.Sendto(s.Fd(), b, 0, sa)
		switch {
		case err == nil:
			return nil
		case err == unix.EINTR:
			continue
		case err == unix.EAGAIN:
			if s.Edge() {
				if rerr := s.Drained("write", poll.Writable); rerr != nil {
					return rerr
				}
			}
			return ErrWouldBlock
		default:
			return os.NewSyscallError("sendto", err)
		}
	}
}

// streamBuffered is the Stream's Buffered, or zeros without a Stream.
func streamBuffered(s *sock) (unread, unsent int) {
	if s.RLock("buffered") != nil {
		return 0, 0
	}
	defer s.RUnlock()
	if st := s.Stream(); st != nil {
		return st.Buffered()
	}
	return 0, 0
}

// streamFlushed is the Stream's Flushed, or true without a Stream.
func streamFlushed(s *sock) bool {
	if s.RLock("flushed") != nil {
		return true
	}
	defer s.RUnlock()
	if st := s.Stream(); st != nil {
		return st.Flushed()
	}
	return true
}

// shutdown shuts down one or both directions of a stream.
func shutdown(s *sock, how int) error {
	if err := s.RLock("shutdown"); err != nil {
		return err
	}
	defer s.RUnlock()
	if st := s.Stream(); st != nil && how == unix.SHUT_WR {
		// After the bytes the Stream still queues.
		return os.NewSyscallError("shutdown", st.CloseWrite())
	}
	if st := s.Stream(); st != nil && how == unix.SHUT_RDWR {
		if err := st.CloseWrite(); err != nil {
			return os.NewSyscallError("shutdown", err)
		}
		how = unix.SHUT_RD
	}
	return os.NewSyscallError("shutdown", unix.Shutdown(s.Fd(), how))
}

// setsockoptInt sets an integer socket option.
func setsockoptInt(s *sock, level, opt, value int) error {
	if err := s.RLock("setsockopt"); err != nil {
		return err
	}
	defer s.RUnlock()
	return os.NewSyscallError("setsockopt", unix.SetsockoptInt(s.Fd(), level, opt, value))
}

// accept takes one pending connection. ECONNABORTED (a connection reset
// while it waited in the backlog) is skipped, as package net does: it is
// not the listener's failure and the next one may be fine.
func accept(s *sock) (int, netip.AddrPort, error) {
	if err := s.RLock("accept"); err != nil {
		return -1, netip.AddrPort{}, err
	}
	defer s.RUnlock()
	for {
		nfd, sa, err := sysAccept(s.Fd())
		switch {
		case err == nil:
			return nfd, sa, nil
		case err == unix.EINTR || err == unix.ECONNABORTED:
			continue
		case err == unix.EAGAIN:
			if s.Edge() {
				if rerr := s.Drained("accept", poll.Readable); rerr != nil {
					return -1, netip.AddrPort{}, rerr
				}
			}
			return -1, netip.AddrPort{}, ErrWouldBlock
		default:
			if errno, ok := err.(unix.Errno); ok {
				return -1, netip.AddrPort{}, os.NewSyscallError(acceptFunc, errno)
			}
			return -1, netip.AddrPort{}, err // already wrapped by sysAccept
		}
	}
}
