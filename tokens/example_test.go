//go:build unix

package tokens_test

import (
	"errors"
	"fmt"
	"io"
	"net"

	"github.com/unipoll/unipoll/poll"
	"github.com/unipoll/unipoll/socket"
	"github.com/unipoll/unipoll/tokens"
)

// A raw Poll server that finds each connection from the Token of its
// event. The listener has a fixed Token below tokens.MinToken, which the
// Table never hands out. The second connection takes the slot the first
// left, with a new generation, so a late event of the first could not
// reach it.
func Example() {
	ln, err := socket.ListenTCP("tcp4", "127.0.0.1:0")
	if err != nil {
		panic(err)
	}
	defer ln.Close()
	p, err := poll.New()
	if err != nil {
		panic(err)
	}
	defer p.Close()
	const tokListener = 1
	if err := p.Register(ln, tokListener, poll.Readable, poll.Level); err != nil {
		panic(err)
	}

	// Clients, one after another: each says hello, checks the echo and
	// hangs up once the server has closed the one before.
	closed := make(chan struct{})
	clientErr := make(chan error, 1)
	go func() {
		clientErr <- clients(ln.Addr().String(), closed)
	}()

	var conns tokens.Table[*socket.TCPConn]
	events := poll.NewEvents(16)
	buf := make([]byte, 512)
	for served := 0; served < 2; {
		if _, err := p.Poll(events, -1); err != nil {
			panic(err)
		}
		for ev := range events.All() {
			if ev.Token == tokListener {
				if err := accept(p, ln, &conns); err != nil {
					panic(err)
				}
				continue
			}
			c, ok := conns.Get(ev.Token)
			if !ok {
				continue // removed earlier in this batch
			}
			n, err := c.Read(buf)
			switch {
			case errors.Is(err, socket.ErrWouldBlock):
			case err == io.EOF:
				if _, ok := conns.Remove(ev.Token); !ok {
					panic("lost a connection")
				}
				if err := p.Deregister(c); err != nil {
					panic(err)
				}
				if err := c.Close(); err != nil {
					panic(err)
				}
				fmt.Printf("%#x closed, %d left\n", uint64(ev.Token), conns.Len())
				served++
				closed <- struct{}{}
			case err != nil:
				panic(err)
			default:
				fmt.Printf("%#x says %q\n", uint64(ev.Token), buf[:n])
				if _, err := c.Write(buf[:n]); err != nil {
					panic(err)
				}
			}
		}
	}
	if err := <-clientErr; err != nil {
		panic(err)
	}
	// Output:
	// 0x100000000 says "hello 0"
	// 0x100000000 closed, 0 left
	// 0x200000000 says "hello 1"
	// 0x200000000 closed, 0 left
}

// accept takes every pending connection and gives each a Token.
func accept(p *poll.Poll, ln *socket.TCPListener, conns *tokens.Table[*socket.TCPConn]) error {
	for {
		c, err := ln.Accept()
		if errors.Is(err, socket.ErrWouldBlock) {
			return nil
		}
		if err != nil {
			return err
		}
		tok, err := conns.Insert(c)
		if err == nil {
			err = p.Register(c, tok, poll.Readable, poll.Level)
		}
		if err != nil {
			return errors.Join(err, c.Close())
		}
	}
}

func clients(addr string, closed <-chan struct{}) error {
	for i := range 2 {
		c, err := net.Dial("tcp4", addr)
		if err != nil {
			return err
		}
		msg := fmt.Sprintf("hello %d", i)
		if _, err := c.Write([]byte(msg)); err != nil {
			return errors.Join(err, c.Close())
		}
		reply := make([]byte, len(msg))
		if _, err := io.ReadFull(c, reply); err != nil || string(reply) != msg {
			return errors.Join(fmt.Errorf("echo %q of %q: %w", reply, msg, err), c.Close())
		}
		if err := c.Close(); err != nil {
			return err
		}
		<-closed
	}
	return nil
}
