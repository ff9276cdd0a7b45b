package netloop

import (
	"bytes"
	"errors"
	"io"
	"net"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"

	"github.com/unipoll/unipoll/eventloop"
)

// bufferSetter is a socket whose kernel buffers can be sized.
type bufferSetter interface {
	SetReadBuffer(int) error
	SetWriteBuffer(int) error
}

// smallBuffers gives every socket of the rig 32 KiB buffers, so that
// back pressure shows after a few hundred KiB, not after the megabytes
// that loopback's autotuning allows.
func smallBuffers(t *testing.T, r *relayRig) {
	t.Helper()
	for _, s := range []any{r.front, r.back, r.a.Stream(), r.b.Stream()} {
		if n, ok := s.(noFdStream); ok {
			s = n.s
		}
		bs, ok := s.(bufferSetter)
		require.True(t, ok, "%T cannot size its buffers", s)
		require.NoError(t, bs.SetReadBuffer(32<<10))
		require.NoError(t, bs.SetWriteBuffer(32<<10))
	}
}

// A slow reader on one side holds the writer on the other back: the
// relay stops reading the front once the back's socket is full and its
// pipe (or buffer) holds its bound, so what the front could write stays
// within the sockets' buffers and the transport's bound; then, read slowly,
// everything arrives intact.
func TestRelaySlowReader(t *testing.T) {
	for _, rc := range relayCases {
		t.Run(rc.String(), func(t *testing.T) {
			r := newRelayRig(t, rc, Config{})
			smallBuffers(t, r)
			rel := relayOf(r.a)
			require.NoError(t, r.front.SetDeadline(time.Now().Add(2*waitLimit)))
			require.NoError(t, r.back.SetDeadline(time.Now().Add(2*waitLimit)))
			s := stream{seed: 4, n: 4 << 20} // several times what the buffers and the transport hold
			if testing.Short() {
				s.n = 2 << 20 // the stress runs
			}
			var written atomic.Int64
			sent := make(chan error, 1)
			go func() {
				in, buf := s.reader(), make([]byte, 16<<10)
				for {
					n, err := in.Read(buf)
					if n > 0 {
						if _, werr := r.front.Write(buf[:n]); werr != nil {
							sent <- werr
							return
						}
						written.Add(int64(n))
					}
					if err == io.EOF {
						sent <- nil
						return
					}
				}
			}()
			eventually(t, "the relay to stop reading the front", func() bool {
				return rel.ab.stalled.Load() && rel.ab.sinkBlocked.Load()
			})
			quiesce(t, r.l)
			// Bounded: the kernel's buffers (a few times 32 KiB each, as
			// Linux doubles and rounds them) and one transport.
			const limit = 4 << 20
			require.Less(t, written.Load(), int64(limit), "the front wrote on while the back did not read")
			const bound = relayMaxBound // the transport may have grown meanwhile
			require.LessOrEqual(t, rel.ab.waiting(), bound)
			// The slow reader: small reads, the bound checked at each.
			var got bytes.Buffer
			buf := make([]byte, 4<<10)
			for int64(got.Len()) < s.n {
				n, err := r.back.Read(buf)
				require.NoError(t, err)
				got.Write(buf[:n])
				require.LessOrEqual(t, rel.ab.waiting(), bound)
				require.Less(t, written.Load()-int64(got.Len()), int64(limit))
			}
			require.NoError(t, <-sent)
			n, sum, err := readSum(bytes.NewReader(got.Bytes()))
			require.NoError(t, err)
			require.Equal(t, s.n, n)
			require.Equal(t, s.sum(), sum)
		})
	}
}

// headFirst is the front Conn's handler before the relay: at the first
// input it queues a greeting for the front and one for the back, leaves
// the input unconsumed, and relays.
type headFirst struct {
	*relayEnd
	b   *Conn
	err chan error
}

func (h *headFirst) Data(c *Conn, in []byte) int {
	if c.rl.pending() {
		h.err <- errors.New("Data called after Relay")
		return 0
	}
	_, _ = c.WriteString("greeting;")
	_, _ = h.b.WriteString("hello back;") // one worker: another Conn of the Loop may be written
	h.err <- Relay(c, h.b)
	return 0
}

// What a Conn had received and not consumed, and what each had queued,
// when Relay was called go first, in order: the front's unconsumed input
// reaches the back after the back's queued greeting; the front's queued
// greeting reaches the front before what the back sends.
func TestRelayBufferedFirst(t *testing.T) {
	for _, rc := range relayCases {
		if rc.workers > 1 || rc.twoLoops {
			continue // Data writes to the other Conn, which takes one worker of one Loop
		}
		t.Run(rc.String(), func(t *testing.T) {
			forceCopy(t, rc.copy)
			l := newLoop(t, eventloop.Config{})
			sa, front := streamPair(t, rc.transport)
			sb, back := streamPair(t, rc.transport)
			if rc.noFd {
				sa, sb = noFdStream{sa}, noFdStream{sb}
			}
			hb := newRelayEnd()
			b, err := Add(l, sb, hb, Config{})
			require.NoError(t, err)
			ha := &headFirst{relayEnd: newRelayEnd(), b: b, err: make(chan error, 2)}
			_, err = Add(l, sa, ha, Config{})
			require.NoError(t, err)
			_, err = front.Write([]byte("head;"))
			require.NoError(t, err)
			start(t, l, nil)
			require.NoError(t, <-ha.err)
			greeting := make([]byte, len("greeting;"))
			_, err = io.ReadFull(front, greeting)
			require.NoError(t, err)
			require.Equal(t, "greeting;", string(greeting))
			_, err = front.Write([]byte("rest"))
			require.NoError(t, err)
			closeWrite(t, front)
			_, err = back.Write([]byte("answer"))
			require.NoError(t, err)
			closeWrite(t, back)
			got, err := io.ReadAll(back)
			require.NoError(t, err)
			require.Equal(t, "hello back;head;rest", string(got))
			got, err = io.ReadAll(front)
			require.NoError(t, err)
			require.Equal(t, "answer", string(got))
			require.NoError(t, recvErr(t, ha.closed))
			require.NoError(t, recvErr(t, hb.closed))
			require.Len(t, ha.err, 0)
		})
	}
}

// Close of either Conn ends the relay: both close and hear nil; with no
// bytes in flight, both clients read a clean end.
func TestRelayClose(t *testing.T) {
	for _, rc := range relayCases {
		t.Run(rc.String(), func(t *testing.T) {
			r := newRelayRig(t, rc, Config{})
			_, err := r.front.Write([]byte("ping"))
			require.NoError(t, err)
			got := make([]byte, 4)
			_, err = io.ReadFull(r.back, got)
			require.NoError(t, err)
			require.NoError(t, r.b.Async(func(c *Conn) { c.Close() }))
			require.NoError(t, recvErr(t, r.ha.closed))
			require.NoError(t, recvErr(t, r.hb.closed))
			for _, c := range []net.Conn{r.front, r.back} {
				rest, err := io.ReadAll(c)
				require.NoError(t, err)
				require.Empty(t, rest)
			}
		})
	}
}

// IdleTimeout keeps working during a relay: traffic one way keeps both
// Conns alive (the reading side's input, the writing side's output count)
// for several timeouts; once it stops, both close with ErrIdleTimeout
// (the one that timed out first hears it, the other ErrRelayPeer wrapping
// it, or its own), and the clients read a clean end: nothing was dropped.
func TestRelayIdleTimeout(t *testing.T) {
	const idle = time.Second
	r := newRelayRig(t, relayCases[0], Config{IdleTimeout: idle})
	until := time.Now().Add(3 * idle)
	msg, got := []byte("tick"), make([]byte, 4)
	for time.Now().Before(until) {
		_, err := r.front.Write(msg)
		require.NoError(t, err)
		_, err = io.ReadFull(r.back, got)
		require.NoError(t, err, "the relay ended while bytes flowed")
	}
	require.ErrorIs(t, recvErr(t, r.ha.closed), ErrIdleTimeout)
	require.ErrorIs(t, recvErr(t, r.hb.closed), ErrIdleTimeout)
	for _, c := range []net.Conn{r.front, r.back} {
		rest, err := io.ReadAll(c)
		require.NoError(t, err)
		require.Empty(t, rest)
	}
}

// WriteTimeout holds during a relay: a back client that stops reading
// leaves the relay's bytes waiting for b's socket, and b closes with
// ErrWriteTimeout once they have waited that long (a with ErrRelayPeer
// wrapping it); the front, whose bytes were dropped, sees an error, not
// a clean end.
func TestRelayWriteTimeout(t *testing.T) {
	const limit = time.Second
	for _, rc := range []relayCase{relayCases[0], {transport: "tcp", workers: 3}} {
		t.Run(rc.String(), func(t *testing.T) {
			r := newRelayRig(t, rc, Config{WriteTimeout: limit})
			smallBuffers(t, r)
			require.NoError(t, r.front.SetDeadline(time.Now().Add(waitLimit)))
			sent := make(chan error, 1)
			go func() {
				_, err := io.Copy(r.front, stream{seed: 9, n: 64 << 20}.reader())
				sent <- err
			}()
			begun := time.Now()
			errB := recvErr(t, r.hb.closed)
			require.ErrorIs(t, errB, ErrWriteTimeout)
			require.GreaterOrEqual(t, time.Since(begun), limit)
			errA := recvErr(t, r.ha.closed)
			require.ErrorIs(t, errA, ErrRelayPeer)
			require.ErrorIs(t, errA, ErrWriteTimeout)
			err := <-sent
			require.True(t, errors.Is(err, unix.ECONNRESET) || errors.Is(err, unix.EPIPE), "the front's send: %v", err)
		})
	}
}
