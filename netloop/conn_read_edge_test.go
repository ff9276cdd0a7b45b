package netloop

import (
	"io"
	"testing"
	"time"

	"sync/atomic"

	"github.com/stretchr/testify/require"

	"github.com/unipoll/unipoll/eventloop"
	"github.com/unipoll/unipoll/socket"
)

// A Conn reads only while its socket may hold input. Input that arrives
// while it is paused (its last read found the socket drained, and its
// registration no longer asks for Readable) is still read once it
// resumes: the registration that asks for Readable again reports it.
// And calls that only a Trigger brought (Async) make no reads.
func TestConnReadsInputThatCameWhilePaused(t *testing.T) {
	for _, workers := range []int{1, 2} {
		l := newLoop(t, eventloop.Config{Workers: workers})
		start(t, l, nil)
		a, peer := tcpClientPair(t)
		s := &countingStream{TCPConn: a}
		c, err := Add(l, s, newEcho(), Config{})
		require.NoError(t, err)

		echoBack := func(msg string) {
			t.Helper()
			_, err := peer.Write([]byte(msg))
			require.NoError(t, err)
			require.NoError(t, peer.SetReadDeadline(time.Now().Add(waitLimit)))
			got := make([]byte, len(msg))
			_, err = io.ReadFull(peer, got)
			require.NoError(t, err)
			require.Equal(t, msg, string(got))
		}
		echoBack("before")

		reads := func() int64 {
			done := make(chan struct{})
			require.NoError(t, c.Async(func(*Conn) { close(done) }))
			<-done
			return s.reads.Load()
		}
		before := reads()
		for range 10 {
			require.NoError(t, c.Async(func(*Conn) {}))
		}
		require.Equal(t, before, reads(), "calls that Async brought read the socket (workers %d)", workers)

		paused := make(chan struct{})
		require.NoError(t, c.Async(func(c *Conn) { c.PauseRead(); close(paused) }))
		<-paused
		settle(t, l, workers)
		_, err = peer.Write([]byte("while paused"))
		require.NoError(t, err)
		settle(t, l, workers)
		require.Equal(t, before, reads(), "a paused Conn read (workers %d)", workers)
		require.NoError(t, c.Async(func(c *Conn) { c.ResumeRead() }))
		require.NoError(t, peer.SetReadDeadline(time.Now().Add(waitLimit)))
		got := make([]byte, len("while paused"))
		_, err = io.ReadFull(peer, got)
		require.NoError(t, err, "the input that came while paused was not read after ResumeRead (workers %d)", workers)
		require.Equal(t, "while paused", string(got))
		echoBack("after")
	}
}

// countingStream counts the reads a Conn makes, including those that
// return nothing.
type countingStream struct {
	*socket.TCPConn
	reads atomic.Int64
}

func (s *countingStream) Read(b []byte) (int, error) {
	s.reads.Add(1)
	return s.TCPConn.Read(b)
}

// settle gives an event that should not come the time to come: quiesce
// on a Loop with one worker. With several, a follower may run posted
// functions while the leader stays in its Poll, so the Poll's iterations
// need not advance; a few calls of the Loop stand in for them there.
func settle(t *testing.T, l *eventloop.Loop, workers int) {
	t.Helper()
	if workers == 1 {
		quiesce(t, l)
		return
	}
	for range 3 {
		done := make(chan struct{})
		require.NoError(t, l.Post(func(*eventloop.Loop) { close(done) }))
		select {
		case <-done:
		case <-time.After(waitLimit):
			t.Fatal("a posted function did not run")
		}
	}
}
