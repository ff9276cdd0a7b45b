package main

import (
	"errors"

	"github.com/unipoll/unipoll/poll"
	"github.com/unipoll/unipoll/socket"
)

// socketStop: a socket pair; the kernel says when our end is readable.
type socketStop struct {
	a, b *socket.UnixConn
	buf  [64]byte
}

func (*socketStop) name() string { return "socket" }

func (s *socketStop) start(p *poll.Poll, tok poll.Token, say sayFunc) error {
	var err error
	if s.a, s.b, err = socket.Pair(); err != nil {
		return err
	}
	if err := p.Register(s.a, tok, poll.Readable, poll.Edge); err != nil {
		return err
	}
	say("Registered one end of a socket pair as token %d (readable, edge-triggered);", tok)
	say("  a goroutine writes to the other end.")
	go func() { _, _ = s.b.Write([]byte("hello through the kernel")) }()
	return nil
}

// handle reads what arrived; under Edge a read pass ends at a short read
// or ErrWouldBlock.
func (s *socketStop) handle(_ poll.Event, say sayFunc) (bool, error) {
	n, err := s.a.Read(s.buf[:])
	if err != nil && !errors.Is(err, socket.ErrWouldBlock) {
		return false, err
	}
	say("read %q", s.buf[:n])
	return n > 0, nil
}

func (s *socketStop) close() error {
	if s.a == nil {
		return nil
	}
	return errors.Join(s.a.Close(), s.b.Close())
}
