package netloop

import (
	"bytes"
	"io"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"

	"github.com/unipoll/unipoll/eventloop"
)

// inlineState is an inline direction's choice, read in a call of its
// source: whether it splices, and whether it has a pipe.
func inlineState(t *testing.T, src *Conn, d *relayDir) (splicing, pipe bool) {
	t.Helper()
	got := make(chan [2]bool, 1)
	require.NoError(t, src.Async(func(*Conn) {
		_, isPipe := func() (transport, bool) {
			if ref := d.t.Load(); ref != nil {
				p, ok := ref.transport.(*pipeTransport)
				return p, ok
			}
			return nil, false
		}()
		got <- [2]bool{d.inl.splicing, isPipe}
	}))
	select {
	case s := <-got:
		return s[0], s[1]
	case <-time.After(waitLimit):
		t.Fatal("the source's call did not run")
		return false, false
	}
}

// pingPong sends n small messages from one client and reads each on the
// other, intact.
func pingPong(t *testing.T, from, to io.ReadWriter, n int) {
	t.Helper()
	msg, got := []byte("sixteen bytes!!!"), make([]byte, 16)
	for i := range n {
		msg[0] = byte(i)
		_, err := from.Write(msg)
		require.NoError(t, err)
		_, err = io.ReadFull(to, got)
		require.NoError(t, err)
		require.Equal(t, msg, got)
	}
}

// An inline relay (one Loop, one worker) picks its way per burst: small
// messages are read and written through the worker's buffer (no pipe is
// made); a burst that fills that buffer goes through a pipe from then on;
// and a small burst after it turns the direction back to the copy. The
// bytes arrive intact all along.
func TestRelayInlineChoosesPerBurst(t *testing.T) {
	r := newRelayRig(t, relayCase{transport: "tcp", workers: 1}, Config{})
	rel := relayOf(r.a)
	require.True(t, rel.inline)
	require.NoError(t, r.front.SetDeadline(time.Now().Add(2*waitLimit)))
	require.NoError(t, r.back.SetDeadline(time.Now().Add(2*waitLimit)))

	pingPong(t, r.front, r.back, 50)
	pingPong(t, r.back, r.front, 50)
	splicing, pipe := inlineState(t, r.a, &rel.ab)
	require.False(t, splicing, "small messages spliced")
	require.False(t, pipe, "small messages made a pipe")
	if ringIO(r.a) {
		// The bytes are in user space already: a large burst is copied
		// too, and arrives intact.
		s := stream{seed: 7, n: 4 << 20}
		sent := make(chan error, 1)
		go func() {
			_, err := io.Copy(r.front, s.reader())
			sent <- err
		}()
		n, sum, err := readSum(io.LimitReader(r.back, s.n))
		require.NoError(t, err)
		require.NoError(t, <-sent)
		require.Equal(t, s.n, n)
		require.Equal(t, s.sum(), sum)
		splicing, pipe = inlineState(t, r.a, &rel.ab)
		require.False(t, splicing, "a Conn on the ring spliced")
		require.False(t, pipe, "a Conn on the ring made a pipe")
		return
	}

	// A large burst: the back does not read until more than the worker's
	// buffer waits in a's socket, so the source's next read fills it.
	// Small buffers toward the back (a's socket keeps its own), so that
	// the relay stalls early and the burst piles up in a's socket.
	require.NoError(t, r.b.Stream().(bufferSetter).SetWriteBuffer(32<<10))
	require.NoError(t, r.back.(bufferSetter).SetReadBuffer(32<<10))
	s := stream{seed: 7, n: 4 << 20}
	sent := make(chan error, 1)
	go func() {
		_, err := io.Copy(r.front, s.reader())
		sent <- err
	}()
	eventually(t, "a burst larger than the worker's buffer to wait in a's socket", func() bool {
		n, err := unix.IoctlGetInt(r.a.Stream().(interface{ Fd() int }).Fd(), unix.SIOCINQ)
		return err == nil && n > eventloop.DefaultReadBuffer
	})
	var got bytes.Buffer
	_, err := io.CopyN(&got, r.back, s.n)
	require.NoError(t, err)
	require.NoError(t, <-sent)
	n, sum, err := readSum(bytes.NewReader(got.Bytes()))
	require.NoError(t, err)
	require.Equal(t, s.n, n)
	require.Equal(t, s.sum(), sum)
	splicing, pipe = inlineState(t, r.a, &rel.ab)
	require.True(t, splicing, "a large burst did not turn to splice(2)")
	require.True(t, pipe)

	pingPong(t, r.front, r.back, 5)
	splicing, _ = inlineState(t, r.a, &rel.ab)
	require.False(t, splicing, "small bursts after a large one still splice")

	// a reads under Level while its input lasts, and under Edge once it
	// has ended (Level would report the end at every look), while the
	// other direction goes on.
	require.True(t, levelOf(t, r.a), "an inline relay's source reads under Edge")
	closeWrite(t, r.front)
	eventually(t, "a to see the end of its input", func() bool { return !levelOf(t, r.a) })
	pingPong(t, r.back, r.front, 5)
}

// levelOf reports whether c is registered Level, read in its call (and
// so after its last settle).
func levelOf(t *testing.T, c *Conn) bool {
	t.Helper()
	got := make(chan bool, 1)
	require.NoError(t, c.Async(func(c *Conn) { got <- c.rl.level }))
	select {
	case l := <-got:
		return l
	case <-time.After(waitLimit):
		t.Fatal("the Conn's call did not run")
		return false
	}
}
