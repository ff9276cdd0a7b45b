//go:build linux

package sys

import (
	"bytes"
	"crypto/rand"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"
)

// Completion mode on the io_uring backend: a stream socket's bytes come
// from the selector's receives and go out by its sends, on real sockets.

// openStreamsOrSkip opens a uring selector in completion mode.
func openStreamsOrSkip(t *testing.T) *uringSelector {
	t.Helper()
	if !slices.Contains(Backends(), BackendUring) {
		t.Skip("io_uring missing or refused on this kernel")
	}
	sel, err := NewWithOptions(BackendUring, Options{Completion: true})
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, sel.Close()) })
	return sel.(*uringSelector)
}

// addStream adds fd as a stream and fails the test if the selector did
// not take its I/O over.
func addStream(t *testing.T, s *uringSelector, fd int, key uint64, interest uint32, mode Mode) Stream {
	t.Helper()
	st, err := s.AddStream(fd, key, interest, mode)
	require.NoError(t, err)
	require.NotNil(t, st)
	return st
}

// readStreamAll reads st until it has want bytes, selecting meanwhile.
func readStreamAll(t *testing.T, s Selector, st Stream, want int) []byte {
	t.Helper()
	var got []byte
	buf := make([]byte, 64<<10)
	limit := time.Now().Add(10 * time.Second)
	for len(got) < want && time.Now().Before(limit) {
		n, err := st.Read(buf)
		if err == unix.EAGAIN {
			selectEvents(t, s, 16, 50*time.Millisecond)
			continue
		}
		require.NoError(t, err)
		require.NotZero(t, n, "EOF after %d of %d bytes", len(got), want)
		got = append(got, buf[:n]...)
	}
	require.Len(t, got, want)
	return got
}

// Bytes written by the peer arrive through Read in order, with Readable
// events (Edge: one per pass), and Write's bytes reach the peer.
func TestUringStreamEcho(t *testing.T) {
	s := openStreamsOrSkip(t)
	p := newSocketpair(t)
	st := addStream(t, s, p.a, 7, Readable|Writable, Edge)

	ev := waitEvent(t, s, 7)
	require.NotZero(t, ev.Ready&Writable, "a new stream is writable")

	msg := make([]byte, 300<<10) // more than the buffers a stream holds
	_, _ = rand.Read(msg)
	go func() {
		for off := 0; off < len(msg); {
			n, err := unix.Write(p.b, msg[off:])
			if err == unix.EAGAIN {
				pfd := []unix.PollFd{{Fd: int32(p.b), Events: unix.POLLOUT}}
				_, _ = unix.Poll(pfd, 1000)
				continue
			}
			if err != nil {
				return
			}
			off += n
		}
	}()
	got := readStreamAll(t, s, st, len(msg))
	require.True(t, bytes.Equal(msg, got), "bytes differ")

	// And back: Write queues, the selector's next wait sends.
	out := []byte("hello from the ring")
	n, err := st.Write(out)
	require.NoError(t, err)
	require.Equal(t, len(out), n)
	back := make([]byte, 64)
	limit := time.Now().Add(5 * time.Second)
	for time.Now().Before(limit) {
		selectEvents(t, s, 16, 10*time.Millisecond)
		if m, err := unix.Read(p.b, back); err == nil {
			require.Equal(t, out, back[:m])
			return
		}
	}
	t.Fatal("the peer never received the Write")
}

// The peer's close is the end of the stream: Readable|Hup, then Read
// returns 0 and no error, after every byte sent before it.
func TestUringStreamEOF(t *testing.T) {
	s := openStreamsOrSkip(t)
	p := newSocketpair(t)
	st := addStream(t, s, p.a, 3, Readable, Edge)
	_, err := unix.Write(p.b, []byte("last words"))
	require.NoError(t, err)
	p.closeB(t)
	got := readStreamAll(t, s, st, len("last words"))
	require.Equal(t, "last words", string(got))
	limit := time.Now().Add(5 * time.Second)
	for time.Now().Before(limit) {
		n, err := st.Read(make([]byte, 16))
		if err == unix.EAGAIN {
			selectEvents(t, s, 16, 20*time.Millisecond)
			continue
		}
		require.NoError(t, err)
		require.Zero(t, n)
		return
	}
	t.Fatal("no end of stream")
}

// Edge: a Readable reported stays quiet until the reader drains (EAGAIN
// and Drained); new bytes after that are a new edge.
func TestUringStreamEdge(t *testing.T) {
	s := openStreamsOrSkip(t)
	p := newSocketpair(t)
	st := addStream(t, s, p.a, 5, Readable, Edge)
	writeByte(t, p.b)
	require.NotZero(t, waitEvent(t, s, 5).Ready&Readable)
	writeByte(t, p.b)
	requireNoEvent(t, s, 5) // quiet: not drained yet
	buf := make([]byte, 16)
	n, err := st.Read(buf)
	require.NoError(t, err)
	require.GreaterOrEqual(t, n, 1)
	for {
		if _, err = st.Read(buf); err == unix.EAGAIN {
			break
		}
		require.NoError(t, err)
	}
	require.NoError(t, s.Drained(p.a, Readable))
	requireNoEvent(t, s, 5)
	writeByte(t, p.b)
	require.NotZero(t, waitEvent(t, s, 5).Ready&Readable)
}

// Level: reported by every Select while bytes wait in the Stream.
func TestUringStreamLevel(t *testing.T) {
	s := openStreamsOrSkip(t)
	p := newSocketpair(t)
	st := addStream(t, s, p.a, 9, Readable, Level)
	writeByte(t, p.b)
	waitEvent(t, s, 9)
	for range 3 {
		_, ok := eventFor(selectEvents(t, s, 16, time.Second), 9)
		require.True(t, ok, "Level reported again while bytes wait")
	}
	_, err := st.Read(make([]byte, 16))
	require.NoError(t, err)
	selectEvents(t, s, 16, 0) // the look after the read may still report it once
	requireNoEvent(t, s, 9)
}

// Delete waits for the receive's last completion, so the bytes the ring
// took come out of Read before the bytes read from the descriptor itself.
func TestUringStreamDeleteKeepsOrder(t *testing.T) {
	s := openStreamsOrSkip(t)
	p := newSocketpair(t)
	st := addStream(t, s, p.a, 4, Readable, Edge)
	_, err := unix.Write(p.b, []byte("first"))
	require.NoError(t, err)
	waitEvent(t, s, 4)
	require.NoError(t, s.Delete(p.a))
	_, err = unix.Write(p.b, []byte("second"))
	require.NoError(t, err)
	got := make([]byte, 0, 16)
	buf := make([]byte, 3)
	limit := time.Now().Add(5 * time.Second)
	for len(got) < len("firstsecond") && time.Now().Before(limit) {
		n, err := st.Read(buf)
		if err == unix.EAGAIN {
			continue
		}
		require.NoError(t, err)
		got = append(got, buf[:n]...)
	}
	require.Equal(t, "firstsecond", string(got))
	require.Zero(t, s.bufs.lent.Load(), "every buffer went back")
}
