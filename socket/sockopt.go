//go:build unix

package socket

import (
	"errors"
	"fmt"
	"math"
	"net"
	"os"
	"runtime"
	"time"

	"golang.org/x/sys/unix"
)

// Errors of the socket options; match them with errors.Is.
var (
	// ErrInvalidOption is returned, wrapped with the option and the value,
	// for a socket option value out of range: a buffer size of zero or
	// less, a negative user timeout, or a value the kernel refuses.
	ErrInvalidOption = errors.New("invalid socket option value")

	// ErrUnsupportedOption is returned, wrapped with the option, for a
	// socket option this platform does not have (TCP_USER_TIMEOUT outside
	// Linux, keep-alive timings on OpenBSD). It matches
	// errors.ErrUnsupported as well.
	ErrUnsupportedOption = fmt.Errorf("socket option not supported on %s: %w", runtime.GOOS, errors.ErrUnsupported)
)

// Keep-alive defaults where net.KeepAliveConfig leaves a timing zero, the
// same as package net's, so a program that moves from net sees no change.
const (
	defaultKeepAliveIdle     = 15 * time.Second
	defaultKeepAliveInterval = 15 * time.Second
	defaultKeepAliveCount    = 9
)

// SetKeepAlive turns TCP keep-alive probes on or off (SO_KEEPALIVE) with
// the system's timings; SetKeepAliveConfig sets the timings too. New
// connections have the system default, which is off (package net turns it
// on for the connections it makes; this package does not).
func (c *TCPConn) SetKeepAlive(on bool) error {
	return setKeepAlive(c.sockOf(), "SetKeepAlive", on)
}

// SetKeepAliveConfig sets keep-alive as net.TCPConn.SetKeepAliveConfig
// does. With Enable false it turns probes off and sets nothing else.
// Otherwise it turns them on and sets the idle time before the first probe,
// the time between probes (both rounded up to whole seconds) and the
// number of unanswered probes after which the connection is dropped. A
// zero field takes package net's default (15 s, 15 s, 9); a negative field
// leaves the system's value unchanged. On OpenBSD, which has no per-socket
// timings, a field that asks for a change fails with ErrUnsupportedOption
// (after probes were turned on).
func (c *TCPConn) SetKeepAliveConfig(cfg net.KeepAliveConfig) error {
	s := c.sockOf()
	const op = "SetKeepAliveConfig"
	if err := setKeepAlive(s, op, cfg.Enable); err != nil || !cfg.Enable {
		return err
	}
	if err := setKeepAliveTiming(s, op, keepIdle, cfg.Idle, defaultKeepAliveIdle); err != nil {
		return err
	}
	if err := setKeepAliveTiming(s, op, keepInterval, cfg.Interval, defaultKeepAliveInterval); err != nil {
		return err
	}
	switch {
	case cfg.Count < 0:
		return nil
	case cfg.Count == 0:
		cfg.Count = defaultKeepAliveCount
	}
	return setIntOpt(s, op, keepCount, cfg.Count)
}

// setKeepAliveTiming sets one keep-alive timing in whole seconds, rounded
// up; d < 0 leaves it unchanged, d == 0 means def.
func setKeepAliveTiming(s *sock, op string, o tcpOpt, d, def time.Duration) error {
	switch {
	case d < 0:
		return nil
	case d == 0:
		d = def
	}
	secs := (d + time.Second - 1) / time.Second
	if secs > math.MaxInt32 {
		return fmt.Errorf("socket: %s: %s %v: %w", op, o.name, d, ErrInvalidOption)
	}
	return setIntOpt(s, op, o, int(secs))
}

// SetLinger sets what Close does with data not yet sent, as
// net.TCPConn.SetLinger: sec < 0 (the default) sends it in the
// background after Close returns; sec == 0 discards it and resets the
// connection, so the peer sees an error (ECONNRESET) rather than a clean
// end of stream; sec > 0 is the same as sec < 0 on most systems (a
// non-blocking Close does not wait), after which the data may be
// discarded.
func (c *TCPConn) SetLinger(sec int) error {
	l := unix.Linger{}
	if sec >= 0 {
		if sec > math.MaxInt32 {
			return fmt.Errorf("socket: SetLinger %d: %w", sec, ErrInvalidOption)
		}
		l.Onoff, l.Linger = 1, int32(sec)
	}
	s := c.sockOf()
	if err := s.RLock("SetLinger"); err != nil {
		return err
	}
	defer s.RUnlock()
	return optError("SetLinger", "SO_LINGER", sec, unix.SetsockoptLinger(s.Fd(), unix.SOL_SOCKET, unix.SO_LINGER, &l))
}

// SetReadBuffer sets the size of the kernel's receive buffer
// (SO_RCVBUF) in bytes; the kernel may round it (Linux doubles it for its
// own bookkeeping) and caps it at its maximum (net.core.rmem_max).
func (c *TCPConn) SetReadBuffer(bytes int) error {
	return setBuffer(c.sockOf(), "SetReadBuffer", bytes)
}

// SetWriteBuffer sets the size of the kernel's send buffer (SO_SNDBUF)
// in bytes, as SetReadBuffer does for the receive buffer.
func (c *TCPConn) SetWriteBuffer(bytes int) error {
	return setBuffer(c.sockOf(), "SetWriteBuffer", bytes)
}

// SetReadBuffer sets the size of the kernel's receive buffer; see
// TCPConn.SetReadBuffer.
func (c *UnixConn) SetReadBuffer(bytes int) error {
	return setBuffer(c.sockOf(), "SetReadBuffer", bytes)
}

// SetWriteBuffer sets the size of the kernel's send buffer; see
// TCPConn.SetWriteBuffer.
func (c *UnixConn) SetWriteBuffer(bytes int) error {
	return setBuffer(c.sockOf(), "SetWriteBuffer", bytes)
}

// SetReadBuffer sets the size of the kernel's receive buffer; see
// TCPConn.SetReadBuffer. Datagrams that arrive while it is full are
// dropped.
func (c *UDPConn) SetReadBuffer(bytes int) error {
	return setBuffer(c.sockOf(), "SetReadBuffer", bytes)
}

// SetWriteBuffer sets the size of the kernel's send buffer; see
// TCPConn.SetWriteBuffer.
func (c *UDPConn) SetWriteBuffer(bytes int) error {
	return setBuffer(c.sockOf(), "SetWriteBuffer", bytes)
}

// SetUserTimeout sets how long transmitted data may stay unacknowledged
// before the kernel drops the connection (TCP_USER_TIMEOUT, RFC 5482),
// rounded up to whole milliseconds; zero restores the system's behaviour.
// Where keep-alive is on, it also bounds how long probes may go
// unanswered. Linux only: elsewhere it fails with ErrUnsupportedOption.
func (c *TCPConn) SetUserTimeout(d time.Duration) error {
	if d < 0 {
		return fmt.Errorf("socket: SetUserTimeout %v: %w", d, ErrInvalidOption)
	}
	ms := (d + time.Millisecond - 1) / time.Millisecond
	if ms > math.MaxInt32 {
		return fmt.Errorf("socket: SetUserTimeout %v: %w", d, ErrInvalidOption)
	}
	return setIntOpt(c.sockOf(), "SetUserTimeout", userTimeout, int(ms))
}

// tcpOpt names a socket option whose number differs between systems, or
// that some lack (level 0 with name set: not on this system).
type tcpOpt struct {
	level, opt int
	name       string
}

func setBuffer(s *sock, op string, bytes int) error {
	o := tcpOpt{unix.SOL_SOCKET, unix.SO_RCVBUF, "SO_RCVBUF"}
	if op == "SetWriteBuffer" {
		o = tcpOpt{unix.SOL_SOCKET, unix.SO_SNDBUF, "SO_SNDBUF"}
	}
	if bytes <= 0 || bytes > math.MaxInt32 {
		return fmt.Errorf("socket: %s %d: %w", op, bytes, ErrInvalidOption)
	}
	return setIntOpt(s, op, o, bytes)
}

func setKeepAlive(s *sock, op string, on bool) error {
	v := 0
	if on {
		v = 1
	}
	return setIntOpt(s, op, tcpOpt{unix.SOL_SOCKET, unix.SO_KEEPALIVE, "SO_KEEPALIVE"}, v)
}

// setIntOpt sets o to v under the read lock (the guard's invariant 2).
func setIntOpt(s *sock, op string, o tcpOpt, v int) error {
	if o.level == 0 {
		return fmt.Errorf("socket: %s: %s: %w", op, o.name, ErrUnsupportedOption)
	}
	if err := s.RLock(op); err != nil {
		return err
	}
	defer s.RUnlock()
	return optError(op, o.name, v, unix.SetsockoptInt(s.Fd(), o.level, o.opt, v))
}

// optError wraps a setsockopt failure: EINVAL (a value the kernel refuses)
// also matches ErrInvalidOption, ENOPROTOOPT ErrUnsupportedOption.
func optError(op, name string, v int, err error) error {
	switch {
	case err == nil:
		return nil
	case errors.Is(err, unix.EINVAL):
		return fmt.Errorf("socket: %s: %s %d: %w (%w)", op, name, v, ErrInvalidOption, os.NewSyscallError("setsockopt", err))
	case errors.Is(err, unix.ENOPROTOOPT):
		return fmt.Errorf("socket: %s: %s: %w (%w)", op, name, ErrUnsupportedOption, os.NewSyscallError("setsockopt", err))
	}
	return fmt.Errorf("socket: %s: %w", op, os.NewSyscallError("setsockopt", err))
}
