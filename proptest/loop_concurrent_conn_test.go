//go:build linux

package proptest

import (
	"errors"
	"fmt"
	"runtime"
	"sync/atomic"
	"time"

	"pgregory.net/rapid"

	"github.com/unipoll/unipoll/eventloop"
	"github.com/unipoll/unipoll/netloop"
	"github.com/unipoll/unipoll/socket"
)

// The Conn of TestLoopConcurrent: a Conn on the same Loop, whose peer
// sends while the script's goroutines hand it functions with Async.
// Checked: its calls (Data, the functions) never overlap, whatever worker
// runs them; each goroutine's functions run in the order it sent them,
// each once; and nothing is lost: once the script is over, every function
// has run and Data has had every byte, with no new input or Async that
// could make up for a lost one. Closing the Loop closes it, once.

// loopConcConn is the Conn of TestLoopConcurrent and its handler.
type loopConcConn struct {
	c        *netloop.Conn
	peer     *socket.UnixConn
	inside   atomic.Int32
	bad      atomic.Pointer[string]
	sent     atomic.Int64 // functions handed to Async
	ran      atomic.Int64 // functions run
	peerSent atomic.Int64 // bytes the peer sent
	got      atomic.Int64 // bytes Data consumed
	closed   atomic.Int32
	last     []int // per script goroutine: the number of its last function run; the Conn's calls only
}

func (cc *loopConcConn) fail(msg string) { cc.bad.CompareAndSwap(nil, &msg) }

func (cc *loopConcConn) enter() {
	if cc.inside.Add(1) > 1 {
		cc.fail("two calls of the Conn at once")
	}
}

func (cc *loopConcConn) Data(c *netloop.Conn, in []byte) int {
	cc.enter()
	cc.got.Add(int64(len(in)))
	cc.inside.Add(-1)
	return len(in)
}

func (cc *loopConcConn) Closed(c *netloop.Conn, err error) {
	if err != nil {
		cc.fail("closed with " + err.Error())
	}
	cc.closed.Add(1)
}

// addConcConn puts a Conn on l, if rapid says so, for goroutines script
// goroutines; nil if not.
func addConcConn(t *rapid.T, l *eventloop.Loop, goroutines int) *loopConcConn {
	if !rapid.Bool().Draw(t, "a Conn") {
		return nil
	}
	a, b, err := socket.Pair()
	if err != nil {
		t.Fatalf("socket.Pair: %v", err)
	}
	cc := &loopConcConn{peer: b, last: make([]int, goroutines)}
	if cc.c, err = netloop.Add(l, a, cc, netloop.Config{}); err != nil {
		_ = b.Close()
		t.Fatalf("netloop.Add: %v", err)
	}
	return cc
}

// async hands the Conn goroutine g's function number seq.
func (cc *loopConcConn) async(g, seq int) {
	cc.sent.Add(1)
	err := cc.c.Async(func(*netloop.Conn) {
		cc.enter()
		if seq <= cc.last[g] {
			cc.fail("a goroutine's Async functions ran out of order")
		}
		cc.last[g] = seq
		cc.ran.Add(1)
		cc.inside.Add(-1)
	})
	if err != nil {
		cc.fail("Async: " + err.Error())
	}
}

// send is one byte from the peer (none if its socket is full).
func (cc *loopConcConn) send() {
	n, err := cc.peer.Write([]byte{1})
	if err != nil && !errors.Is(err, socket.ErrWouldBlock) {
		cc.fail("the peer's write: " + err.Error())
	}
	cc.peerSent.Add(int64(n))
}

// settled waits for every function and byte to be taken; it returns what
// is missing if they are not within d.
func (cc *loopConcConn) settled(d time.Duration) string {
	deadline := time.Now().Add(d)
	for cc.ran.Load() != cc.sent.Load() || cc.got.Load() != cc.peerSent.Load() {
		if time.Now().After(deadline) {
			return fmt.Sprintf("the Conn ran %d of %d Async functions and had %d of the %d bytes its peer sent",
				cc.ran.Load(), cc.sent.Load(), cc.got.Load(), cc.peerSent.Load())
		}
		runtime.Gosched()
	}
	return ""
}

// check reports the first violation seen, and checks the Conn's one close
// once the Loop is closed.
func (cc *loopConcConn) check(t *rapid.T) {
	defer cc.peer.Close()
	if p := cc.bad.Load(); p != nil {
		t.Fatalf("Conn: %s", *p)
	}
	if n := cc.closed.Load(); n != 1 || !cc.c.Closed() {
		t.Fatalf("Conn: after the Loop's Close, closed %d times (Closed() = %v)", n, cc.c.Closed())
	}
}
