package main

import (
	"errors"
	"net"
	"time"

	"github.com/unipoll/unipoll/poll"
	"github.com/unipoll/unipoll/socket"
	"github.com/unipoll/unipoll/tokens"
)

// tcpStop: a TCP listener; a client from package net connects, and the
// accepted connection gets its token from a tokens.Table (what a raw-Poll
// server keeps its connections in) and its socket options.
type tcpStop struct {
	ln     *socket.TCPListener
	conns  tokens.Table[*socket.TCPConn]
	client chan error // the client goroutine's end
}

func (*tcpStop) name() string { return "tcp" }

func (s *tcpStop) start(p *poll.Poll, tok poll.Token, say sayFunc) error {
	var err error
	if s.ln, err = socket.ListenTCP("tcp", "127.0.0.1:0"); err != nil {
		return err
	}
	if err := p.Register(s.ln, tok, poll.Readable, poll.Edge); err != nil {
		return err
	}
	say("Registered a TCP listener on %s as token %d; a net.Dial client connects.", s.ln.Addr(), tok)
	addr := s.ln.Addr().String()
	s.client = make(chan error, 1)
	go func() { s.client <- dialAndRead(addr) }()
	return nil
}

// dialAndRead connects and reads until the server ends the connection.
func dialAndRead(addr string) error {
	c, err := net.DialTimeout("tcp", addr, 5*time.Second)
	if err != nil {
		return err
	}
	defer c.Close()
	if err := c.SetReadDeadline(time.Now().Add(5 * time.Second)); err != nil {
		return err
	}
	_, err = c.Read(make([]byte, 1))
	return err
}

// handle accepts until ErrWouldBlock (Edge), gives each connection a token
// and its options, and closes it with a reset.
func (s *tcpStop) handle(_ poll.Event, say sayFunc) (bool, error) {
	accepted := false
	for {
		c, err := s.ln.Accept()
		if errors.Is(err, socket.ErrWouldBlock) {
			return accepted, nil
		}
		if err != nil {
			return accepted, err
		}
		tok, err := s.conns.Insert(c)
		if err != nil {
			return accepted, errors.Join(err, c.Close())
		}
		cfg := net.KeepAliveConfig{Enable: true, Idle: 30 * time.Second, Interval: 10 * time.Second, Count: 3}
		if err := errors.Join(c.SetKeepAliveConfig(cfg), c.SetNoDelay(true), c.SetLinger(0)); err != nil {
			return accepted, err
		}
		say("accepted %s: token %#x from a tokens.Table; keep-alive after %v idle, every %v, %d probes; linger 0",
			c.RemoteAddr(), uint64(tok), cfg.Idle, cfg.Interval, cfg.Count)
		got, _ := s.conns.Get(tok)
		s.conns.Remove(tok)
		if err := got.Close(); err != nil {
			return accepted, err
		}
		say("  closed with a reset, so the client fails: %v", <-s.client) // in its read, or in its Dial if the reset came first
		accepted = true
	}
}

func (s *tcpStop) close() error {
	if s.ln == nil {
		return nil
	}
	var errs []error
	for tok, c := range s.conns.All() {
		s.conns.Remove(tok)
		errs = append(errs, c.Close())
	}
	return errors.Join(append(errs, s.ln.Close())...)
}
