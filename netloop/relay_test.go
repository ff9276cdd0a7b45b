package netloop

import (
	"errors"
	"io"
	"net"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"

	"github.com/unipoll/unipoll/eventloop"
)

// pump sends s on c and reads what comes back on it, at once, as a proxy's
// client does: it returns what it read (count, hash) and the errors.
type pumped struct {
	n       int64
	sum     [32]byte
	readErr error
	sendErr error
}

func pump(c net.Conn, s stream, closeAfter bool) <-chan pumped {
	done := make(chan pumped, 1)
	sent := make(chan error, 1)
	go func() {
		_, err := io.Copy(c, s.reader())
		if err == nil && closeAfter {
			err = c.(interface{ CloseWrite() error }).CloseWrite()
		}
		sent <- err
	}()
	go func() {
		var p pumped
		p.n, p.sum, p.readErr = readSum(c)
		p.sendErr = <-sent
		done <- p
	}()
	return done
}

// Bytes each way, intact, through a relay between two net clients; each
// client's CloseWrite reaches the other as the end of input, and once both
// directions have ended both Conns close and hear nil. Data is never
// called. The pipes are closed with the Conns.
func TestRelayBulk(t *testing.T) {
	for _, rc := range relayCases {
		t.Run(rc.String(), func(t *testing.T) {
			size := int64(64 << 20)
			if rc.workers > 1 || rc.transport == "unix" {
				size = 8 << 20 // the 64 MiB runs are tcp with one worker, both ways of relaying
			}
			if testing.Short() {
				size = 1 << 20 // the stress runs
			}
			r := newRelayRig(t, rc, Config{})
			deadline := time.Now().Add(2 * waitLimit)
			require.NoError(t, r.front.SetDeadline(deadline))
			require.NoError(t, r.back.SetDeadline(deadline))
			up, down := stream{seed: 1, n: size}, stream{seed: 2, n: size + 12345}
			front := pump(r.front, up, true)
			back := pump(r.back, down, false)
			br := <-back // the front's half of the relay has ended, the back's still runs
			pipes := openPipes(t, r, rc)
			closeWrite(t, r.back)
			fr := <-front
			require.NoError(t, fr.sendErr)
			require.NoError(t, br.sendErr)
			require.NoError(t, fr.readErr)
			require.NoError(t, br.readErr)
			require.Equal(t, down.n, fr.n, "bytes back->front")
			require.Equal(t, up.n, br.n, "bytes front->back")
			require.Equal(t, down.sum(), fr.sum, "content back->front")
			require.Equal(t, up.sum(), br.sum, "content front->back")
			require.NoError(t, recvErr(t, r.ha.closed))
			require.NoError(t, recvErr(t, r.hb.closed))
			require.Len(t, r.ha.data, 0, "Data called on a relayed Conn")
			require.Len(t, r.hb.data, 0, "Data called on a relayed Conn")
			pipes.requireClosed(t)
		})
	}
}

// waiting is what the direction holds for its sink: in the transport, and
// the head (where an inline copy keeps what the sink's socket did not take).
func (d *relayDir) waiting() int {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.held() + len(d.head)
}

// recvErr waits for a CloseHandler's error.
func recvErr(t *testing.T, ch <-chan error) error {
	t.Helper()
	select {
	case err := <-ch:
		return err
	case <-time.After(waitLimit):
		t.Fatal("the Conn did not close")
		return nil
	}
}

// A half-close goes through while the other direction still flows: the
// front's CloseWrite reaches the back as the end of input, the back then
// answers and closes; and the same the other way round.
func TestRelayHalfClose(t *testing.T) {
	for _, rc := range relayCases {
		t.Run(rc.String(), func(t *testing.T) {
			for _, first := range []string{"front", "back"} {
				t.Run(first+" first", func(t *testing.T) {
					r := newRelayRig(t, rc, Config{})
					x, y := r.front, r.back
					if first == "back" {
						x, y = y, x
					}
					_, err := x.Write([]byte("request"))
					require.NoError(t, err)
					closeWrite(t, x)
					got, err := io.ReadAll(y) // to the end of input: the half-close came through
					require.NoError(t, err)
					require.Equal(t, "request", string(got))
					// The other direction still flows, after the end of the first.
					answer := make([]byte, 1<<20)
					for i := range answer {
						answer[i] = byte(i * 7)
					}
					go func() {
						_, _ = y.Write(answer)
						_ = y.(interface{ CloseWrite() error }).CloseWrite()
					}()
					back, err := io.ReadAll(x)
					require.NoError(t, err)
					require.Equal(t, answer, back)
					require.NoError(t, recvErr(t, r.ha.closed))
					require.NoError(t, recvErr(t, r.hb.closed))
				})
			}
		})
	}
}

// A reset on one side closes the other: the reset Conn hears the error,
// its peer ErrRelayPeer wrapping it; bytes on their way to the reset side
// are lost, so the other client sees an error too, never a clean end.
func TestRelayReset(t *testing.T) {
	for _, rc := range relayCases {
		if rc.transport != "tcp" {
			continue // a reset is TCP's
		}
		t.Run(rc.String(), func(t *testing.T) {
			r := newRelayRig(t, rc, Config{})
			// Small buffers, so that what the back sends waits in the relay
			// while the front does not read.
			require.NoError(t, r.back.(*net.TCPConn).SetWriteBuffer(16<<10))
			require.NoError(t, r.front.(*net.TCPConn).SetReadBuffer(16<<10))
			require.NoError(t, r.back.SetDeadline(time.Now().Add(waitLimit)))
			sent := make(chan error, 1)
			go func() {
				_, err := io.Copy(r.back, stream{seed: 3, n: 64 << 20}.reader())
				sent <- err
			}()
			eventually(t, "bytes to wait in the relay", func() bool {
				return relayOf(r.a).ba.waiting() > 0
			})
			require.NoError(t, r.front.(*net.TCPConn).SetLinger(0))
			require.NoError(t, r.front.Close())
			errA := recvErr(t, r.ha.closed)
			require.Error(t, errA)
			require.NotErrorIs(t, errA, ErrRelayPeer)
			errB := recvErr(t, r.hb.closed)
			require.ErrorIs(t, errB, ErrRelayPeer)
			require.ErrorIs(t, errB, errA)
			err := <-sent
			require.Error(t, err, "the back's sending ended without an error")
			require.True(t, errors.Is(err, unix.ECONNRESET) || errors.Is(err, unix.EPIPE), "back's send: %v", err)
		})
	}
}

// Relay refuses what it cannot relay, with the error that says why, and
// leaves the Conns it refused as they were: they read and hand their
// input to Data.
func TestRelayRefuses(t *testing.T) {
	l := newLoop(t, eventloop.Config{})
	start(t, l, nil)
	add := func() (*Conn, *relayEnd, net.Conn) {
		s, client := streamPair(t, "unix")
		h := newRelayEnd()
		c, err := Add(l, s, h, Config{})
		require.NoError(t, err)
		return c, h, client
	}
	a, _, _ := add()
	b, _, _ := add()
	c, hc, cc := add()
	d, hd, _ := add()
	require.ErrorIs(t, Relay(nil, a), ErrInvalidArgument)
	require.ErrorIs(t, Relay(a, &Conn{}), ErrInvalidArgument)
	require.ErrorIs(t, Relay(a, a), ErrInvalidArgument)
	require.NoError(t, Relay(a, b))
	require.ErrorIs(t, Relay(c, a), ErrInvalidArgument, "a relays already")
	require.ErrorIs(t, Relay(b, c), ErrInvalidArgument, "b relays already")
	_, err := cc.Write([]byte("still mine"))
	require.NoError(t, err)
	select {
	case n := <-hc.data:
		require.Equal(t, len("still mine"), n)
	case <-time.After(waitLimit):
		t.Fatal("a Conn that Relay refused does not read")
	}
	// A closed Conn: ErrClosed, and the other is left alone.
	require.NoError(t, c.Async(func(c *Conn) { c.Abort(nil) }))
	require.NoError(t, recvErr(t, hc.closed))
	require.ErrorIs(t, Relay(c, d), ErrClosed)
	require.ErrorIs(t, Relay(d, c), ErrClosed)
	require.False(t, d.rl.pending(), "d was left claimed")
	require.Len(t, hd.closed, 0)
}
