package netloop

import (
	"context"
	"errors"
	"net"
	"net/netip"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/unipoll/unipoll/eventloop"
	"github.com/unipoll/unipoll/internal/testsupport"
	"github.com/unipoll/unipoll/socket"
)

// The dials here need a connect that hangs: Linux drops the SYNs sent to
// a listener whose accept queue is full (testsupport.FullBacklog).

// fullBacklog is testsupport.FullBacklog.
func fullBacklog(t *testing.T) string { return testsupport.FullBacklog(t) }

// A listener whose accept queue is full drops the SYN, so the connect
// hangs: the Dialer's Timeout ends it, no sooner, with ErrDialTimeout,
// which is also os.ErrDeadlineExceeded and a net.Error timeout.
func TestDialTimeout(t *testing.T) {
	l := newLoop(t, eventloop.Config{})
	start(t, l, nil)
	addr := fullBacklog(t)
	const timeout = 200 * time.Millisecond
	r := newDialResult()
	began := time.Now()
	d := Dialer{Timeout: timeout}
	require.NoError(t, d.Dial(context.Background(), l, "tcp", addr, newEcho(), r.done))
	o := r.wait(t, l)
	require.GreaterOrEqual(t, time.Since(began), timeout)
	require.Nil(t, o.c)
	require.ErrorIs(t, o.err, ErrDialTimeout)
	require.ErrorIs(t, o.err, os.ErrDeadlineExceeded)
	var ne net.Error
	require.ErrorAs(t, o.err, &ne)
	require.True(t, ne.Timeout())
	eventually(t, "the connecting socket closed", func() bool { return l.Sources() == 1 }) // the dial set's
}

// A context deadline bounds the dial as Timeout does.
func TestDialContextDeadline(t *testing.T) {
	l := newLoop(t, eventloop.Config{})
	start(t, l, nil)
	addr := fullBacklog(t)
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	r := newDialResult()
	require.NoError(t, Dial(ctx, l, "tcp", addr, newEcho(), Config{}, r.done))
	o := r.wait(t, l)
	require.ErrorIs(t, o.err, ErrDialTimeout)
	require.ErrorIs(t, o.err, os.ErrDeadlineExceeded)
}

// A context cancelled while the connect hangs ends the dial with
// context.Canceled and the context's cause; the socket is closed.
func TestDialCancelled(t *testing.T) {
	l := newLoop(t, eventloop.Config{})
	start(t, l, nil)
	addr := fullBacklog(t)
	ctx, cancel := context.WithCancelCause(context.Background())
	r := newDialResult()
	before := l.Sources()
	require.NoError(t, Dial(ctx, l, "tcp", addr, newEcho(), Config{}, r.done))
	eventually(t, "the connect on the Loop", func() bool { return l.Sources() > before })
	cause := errors.New("the client went away")
	cancel(cause)
	o := r.wait(t, l)
	require.Nil(t, o.c)
	require.ErrorIs(t, o.err, context.Canceled)
	require.ErrorIs(t, o.err, cause)
	require.NotErrorIs(t, o.err, ErrDialTimeout)
	eventually(t, "the connecting socket closed", func() bool { return l.Sources() == 1 })
}

// The Loop closes while dials wait for a lookup and for a connect: each
// done hears ErrClosed, once, and nothing is left behind.
func TestDialLoopClosed(t *testing.T) {
	l, err := eventloop.New(eventloop.Config{})
	require.NoError(t, err)
	run := start(t, l, nil)
	stub := newDNSStub(t, 0)
	resolving, connecting := newDialResult(), newDialResult()
	d := Dialer{Resolver: stub.resolver()}
	require.NoError(t, d.Dial(context.Background(), l, "tcp4", stubName+":80", newEcho(), resolving.done))
	require.NoError(t, d.Dial(context.Background(), l, "tcp", fullBacklog(t), newEcho(), connecting.done))
	eventually(t, "the stub asked", func() bool { return stub.queries.Load() > 0 })
	eventually(t, "the connect on the Loop", func() bool { return l.Sources() == 2 })
	require.NoError(t, l.Close())
	if err := run.Stop(t); err != nil {
		// Run should return nil after Close, but on the poll backend it
		// sometimes returns ErrClosed (1 run in 200): eventloop's
		// matter, not the dials'.
		require.ErrorIs(t, err, ErrClosed)
	}
	for _, r := range []*dialResult{resolving, connecting} {
		o := r.wait(t, nil)
		require.ErrorIs(t, o.err, ErrClosed)
		require.Nil(t, o.c)
	}
	stub.answer() // the lookup's goroutine may end now; goleak checks it did
	eventually(t, "no second done", func() bool {
		return resolving.calls.Load() == 1 && connecting.calls.Load() == 1
	})
	require.Zero(t, l.Sources())
	require.True(t, errors.Is(Dial(context.Background(), l, "tcp", "127.0.0.1:1", newEcho(), Config{}, resolving.done), ErrClosed))
}

// A name with two addresses, the first of which never answers (its
// listener's queue is full): the first connect gets its share of the
// Timeout (half of it here, as net.Dialer shares it), times out, and the
// second address connects within what is left.
func TestDialNextAddressAfterTimeout(t *testing.T) {
	l := newLoop(t, eventloop.Config{})
	start(t, l, nil)
	hanging := fullBacklog(t) // on 127.0.0.1
	port := hanging[strings.LastIndexByte(hanging, ':')+1:]
	ln, err := net.Listen("tcp4", "127.0.0.2:"+port)
	require.NoError(t, err)
	accepted := acceptAll(t, ln)
	stub := newDNSStub(t, 0, netip.MustParseAddr("127.0.0.1"), netip.MustParseAddr("127.0.0.2"))
	stub.answer()
	const timeout = 4 * time.Second // 2 s each: partialDeadline's minimum
	d := Dialer{Resolver: stub.resolver(), Timeout: timeout}
	r := newDialResult()
	began := time.Now()
	require.NoError(t, d.Dial(context.Background(), l, "tcp4", stubName+":"+port, newEcho(), r.done))
	o := r.wait(t, l)
	took := time.Since(began)
	require.NoError(t, o.err)
	require.GreaterOrEqual(t, took, timeout/2, "the first address had half the time")
	require.Less(t, took, timeout+time.Second, "the second address connected in what was left")
	require.Equal(t, "127.0.0.2:"+port, o.c.Stream().(*socket.TCPConn).RemoteAddr().String())
	<-accepted
	require.NoError(t, o.c.Async(func(c *Conn) { c.Close() }))
}
