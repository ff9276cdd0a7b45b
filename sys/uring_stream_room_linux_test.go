//go:build linux

package sys

import (
	"bytes"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"
)

// A send that finds no room waits for it without giving the kernel a
// send that blocks (S6 in uringStream): after every step, the bytes the
// peer read, the bytes in its socket and the Stream's unsent bytes add up
// to what Write took, never more. The peer has shut its sending side,
// which is what made the kernel hand every send that found no room to a
// worker thread, where it kept delivering bytes that its completion had
// not counted yet (46,850 steps over in three runs of an earlier build).
func TestUringStreamSendCountsExact(t *testing.T) {
	s := openStreamsOrSkip(t)
	p := newSocketpair(t)
	require.NoError(t, unix.SetsockoptInt(p.a, unix.SOL_SOCKET, unix.SO_SNDBUF, 1)) // the least the kernel allows
	st := addStream(t, s, p.a, 1, Readable|Writable, Edge)
	require.NoError(t, unix.Shutdown(p.b, unix.SHUT_WR))

	r := rand.New(rand.NewPCG(1, 2))
	msg := make([]byte, 300<<10)
	for i := range msg {
		msg[i] = byte(r.IntN(256))
	}
	var got []byte
	taken := 0
	buf := make([]byte, 8<<10)
	evs := make([]Event, 8)
	limit := time.Now().Add(10 * time.Second)
	for len(got) < len(msg) && time.Now().Before(limit) {
		switch r.IntN(4) {
		case 0:
			n, err := st.Write(msg[taken:min(len(msg), taken+r.IntN(30<<10))])
			if err != nil {
				require.ErrorIs(t, err, unix.EAGAIN)
			}
			taken += n
		case 1:
			_, _, err := s.Select(evs, 0)
			require.NoError(t, err)
		default:
			n, err := unix.Read(p.b, buf[:1+r.IntN(len(buf)-1)])
			if err != unix.EAGAIN {
				require.NoError(t, err)
				got = append(got, buf[:n]...)
			}
		}
		_, unsent := st.Buffered()
		inq, err := unix.IoctlGetInt(p.b, unix.SIOCINQ)
		require.NoError(t, err)
		require.Equal(t, taken, len(got)+inq+unsent, "read %d, %d in the peer's socket, %d unsent", len(got), inq, unsent)
	}
	require.True(t, bytes.Equal(msg, got), "the peer read %d of %d bytes, or not in order", len(got), len(msg))
}

// A peer that shut its sending side and does not read: the Stream's send
// waits for room without a spin (a half-close alone is reported by every
// poll of the socket, and is not room), and goes on when the peer reads.
func TestUringStreamWaitsForRoomAfterPeerShut(t *testing.T) {
	s := openStreamsOrSkip(t)
	p := newSocketpair(t)
	require.NoError(t, unix.SetsockoptInt(p.a, unix.SOL_SOCKET, unix.SO_SNDBUF, 1))
	st := addStream(t, s, p.a, 1, Readable|Writable, Edge)
	require.NoError(t, unix.Shutdown(p.b, unix.SHUT_WR))
	msg := bytes.Repeat([]byte("r"), 200<<10)
	taken := 0
	for taken < len(msg) {
		n, err := st.Write(msg[taken:])
		taken += n
		if err == unix.EAGAIN {
			break
		}
		require.NoError(t, err)
	}
	require.Positive(t, taken)
	evs := make([]Event, 8)
	for range 3 { // let the sends find the socket full
		_, _, err := s.Select(evs, 5*time.Millisecond)
		require.NoError(t, err)
	}
	_, unsent := st.Buffered()
	require.Positive(t, unsent, "the socket took everything: nothing waits for room")

	// Blocked for 50 ms, a Select enters the kernel a handful of times,
	// not once per poll that a half-close completes at once.
	w0 := s.waits.Load()
	end := time.Now().Add(50 * time.Millisecond)
	for left := time.Until(end); left > 0; left = time.Until(end) {
		_, _, err := s.Select(evs, left)
		require.NoError(t, err)
	}
	require.Less(t, s.waits.Load()-w0, uint64(100), "the Select spun while the send waited for room")

	got := 0
	buf := make([]byte, 64<<10)
	limit := time.Now().Add(10 * time.Second)
	for got < taken && time.Now().Before(limit) {
		_, _, err := s.Select(evs, time.Millisecond)
		require.NoError(t, err)
		n, err := unix.Read(p.b, buf)
		if err == unix.EAGAIN {
			continue
		}
		require.NoError(t, err)
		got += n
	}
	require.Equal(t, taken, got, "the peer read %d of the %d bytes written", got, taken)
}

// Close while a send waits for room, the peer having just made some: the
// bytes not sent are dropped, and the Stream says so. A Write after it
// fails; it does not reach the socket behind the bytes that were lost.
func TestUringStreamCloseWhileWaitingForRoom(t *testing.T) {
	if !slices.Contains(Backends(), BackendUring) {
		t.Skip("io_uring missing or refused on this kernel")
	}
	sel, err := NewWithOptions(BackendUring, Options{Completion: true})
	require.NoError(t, err)
	s := sel.(*uringSelector)
	s.bufCount = testBufCount
	p := newSocketpair(t)
	require.NoError(t, unix.SetsockoptInt(p.a, unix.SOL_SOCKET, unix.SO_SNDBUF, 1))
	st := addStream(t, s, p.a, 1, Readable|Writable, Edge)
	msg := bytes.Repeat([]byte("r"), 60<<10)
	taken, err := st.Write(msg)
	require.NoError(t, err)
	evs := make([]Event, 8)
	for range 3 { // the sends find the socket full and wait for room
		_, _, err := s.Select(evs, 5*time.Millisecond)
		require.NoError(t, err)
	}
	buf := make([]byte, 64<<10)
	got, err := unix.Read(p.b, buf) // room, reported to a poll that Close meets
	require.NoError(t, err)
	require.NoError(t, s.Close())

	_, unsent := st.Buffered()
	require.Zero(t, unsent, "Close left bytes queued")
	_, err = st.Write([]byte("late"))
	require.Error(t, err, "a Write after the Stream's bytes were dropped")
	require.True(t, st.Flushed(), "nothing waits to go any more")
	for {
		n, err := unix.Read(p.b, buf)
		if err == unix.EAGAIN {
			break
		}
		require.NoError(t, err)
		require.Equal(t, bytes.Repeat([]byte("r"), n), buf[:n], "bytes after a gap")
		got += n
	}
	require.LessOrEqual(t, got, taken)
}
