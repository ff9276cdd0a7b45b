package netloop

import (
	"context"
	"net"
	"net/netip"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/unipoll/unipoll/eventloop"
)

// drainBegun reports that a drain has begun on l.
func drainBegun(l *eventloop.Loop) bool {
	s := stateOf(l)
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.draining
}

// runLoop runs l until it is shut down; the result comes on the channel.
func runLoop(l *eventloop.Loop) <-chan error {
	ran := make(chan error, 1)
	go func() { ran <- l.Run(context.Background(), nil) }()
	return ran
}

// A dial in flight when the drain begins (its name still resolving) holds
// Shutdown up: it connects once the name resolves, its done hears the
// Conn, which is drained like the rest (closed, without a DrainHandler),
// and only then does Shutdown return nil. Without the wait, Shutdown
// returned at once and the dial's done never ran while the Loop did.
func TestShutdownWaitsForDial(t *testing.T) {
	l := newLoop(t, eventloop.Config{})
	ran := runLoop(l)
	ln := listenTCP(t)
	acceptAll(t, ln)
	stub := newDNSStub(t, 0, netip.MustParseAddr("127.0.0.1"))
	d := Dialer{Resolver: stub.resolver(), Timeout: waitLimit}
	r := newDialResult()
	addr := net.JoinHostPort(stubName, itoa(ln.Addr().(*net.TCPAddr).Port))
	closed := &closeRec{ch: make(chan closeAt, 1)}
	require.NoError(t, d.Dial(context.Background(), l, "tcp4", addr, closed, r.done))
	eventually(t, "the stub asked", func() bool { return stub.queries.Load() > 0 })

	shut := make(chan error, 1)
	go func() { shut <- Shutdown(context.Background(), l) }()
	eventually(t, "the drain begun", func() bool { return drainBegun(l) })
	// A bounded look for what must not happen: Shutdown returning while
	// the dial is in flight (without the wait it returned within a
	// recheck, 20ms).
	select {
	case err := <-shut:
		t.Fatalf("Shutdown returned %v with a dial in flight", err)
	case <-time.After(10 * drainRecheck):
	}
	stub.answer()
	require.NoError(t, waitShutdown(t, shut))
	require.Equal(t, int32(1), r.calls.Load(), "the dial's done ran before Shutdown returned")
	o := <-r.ch
	require.NoError(t, o.err)
	require.NotNil(t, o.c)
	select {
	case at := <-closed.ch:
		require.NoError(t, at.err, "the dialed Conn is drained as by Close")
	default:
		t.Fatal("Shutdown returned before the dialed Conn closed")
	}
	require.NoError(t, <-ran)
}

// A dial still in flight at the drain's deadline ends with the drain's
// error, which matches ctx's, before Shutdown returns ctx's error.
func TestShutdownForcedEndsDial(t *testing.T) {
	l := newLoop(t, eventloop.Config{})
	ran := runLoop(l)
	stub := newDNSStub(t, 0) // never answers until the test ends
	d := Dialer{Resolver: stub.resolver(), Timeout: 2 * waitLimit}
	r := newDialResult()
	require.NoError(t, d.Dial(context.Background(), l, "tcp4", stubName+":80", newEcho(), r.done))
	eventually(t, "the stub asked", func() bool { return stub.queries.Load() > 0 })

	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	err := Shutdown(ctx, l)
	require.ErrorIs(t, err, context.DeadlineExceeded)
	require.Equal(t, int32(1), r.calls.Load(), "the dial's done ran before Shutdown returned")
	o := <-r.ch
	require.Nil(t, o.c)
	require.ErrorIs(t, o.err, context.DeadlineExceeded)
	require.NoError(t, <-ran)
}
