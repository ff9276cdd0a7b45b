//go:build linux

package sys

import (
	"bytes"
	"crypto/rand"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"
)

// Completion mode on the io_uring backend: a stream socket's bytes come
// from the selector's receives and go out by its sends, on real sockets.

// openStreamsOrSkip opens a uring selector in completion mode, with 256
// buffers (not thousands), so that a test can run them dry.
func openStreamsOrSkip(t *testing.T) *uringSelector {
	t.Helper()
	if !slices.Contains(Backends(), BackendUring) {
		t.Skip("io_uring missing or refused on this kernel")
	}
	sel, err := NewWithOptions(BackendUring, Options{Completion: true})
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, sel.Close()) })
	s := sel.(*uringSelector)
	s.bufCount = testBufCount
	return s
}

// testBufCount is the buffers of a test's selector.
const testBufCount = 256

// addStream adds fd as a stream and fails the test if the selector did
// not take its I/O over.
func addStream(t *testing.T, s *uringSelector, fd int, key uint64, interest uint32, mode Mode) Stream {
	t.Helper()
	st, err := s.AddStream(fd, key, interest, mode)
	require.NoError(t, err)
	require.NotNil(t, st)
	return st
}

// writeAllBlocking writes all of msg to the non-blocking fd, waiting in
// poll(2) while it is full; it stops at the first error (the test's end
// closed fd).
func writeAllBlocking(fd int, msg []byte) {
	var written atomic.Int64
	writeCounting(fd, msg, &written)
}

// writeCounting is writeAllBlocking counting in written as it goes, 32 KiB
// at a time (a test can tell when the writer has stalled).
func writeCounting(fd int, msg []byte, written *atomic.Int64) {
	for off := 0; off < len(msg); {
		n, err := unix.Write(fd, msg[off:min(off+32<<10, len(msg))])
		if err == unix.EAGAIN {
			pfd := []unix.PollFd{{Fd: int32(fd), Events: unix.POLLOUT}}
			_, _ = unix.Poll(pfd, 1000)
			continue
		}
		if err != nil {
			return
		}
		off += n
		written.Add(int64(n))
	}
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
	go writeAllBlocking(p.b, msg)
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

// Oneshot: one event, then none until Modify, which reports what is there.
func TestUringStreamOneshot(t *testing.T) {
	s := openStreamsOrSkip(t)
	p := newSocketpair(t)
	addStream(t, s, p.a, 2, Readable, Edge|Oneshot)
	writeByte(t, p.b)
	waitEvent(t, s, 2)
	writeByte(t, p.b)
	requireNoEvent(t, s, 2)
	require.NoError(t, s.Modify(p.a, 12, Readable, Edge|Oneshot))
	require.NotZero(t, waitEvent(t, s, 12).Ready&Readable)
}

// A reader that does not keep up: the Stream holds at most its bound
// (the receive pauses, so one slow reader cannot take every buffer), and
// reading on resumes it with nothing lost or reordered.
func TestUringStreamSlowReaderPauses(t *testing.T) {
	s := openStreamsOrSkip(t)
	p := newSocketpair(t)
	st := addStream(t, s, p.a, 1, Readable, Edge)
	msg := make([]byte, 2<<20)
	_, _ = rand.Read(msg)
	done := make(chan struct{})
	go func() {
		defer close(done)
		writeAllBlocking(p.b, msg)
	}()
	// Poll without reading until the writer stalls: the Stream stops at
	// its bound.
	limit := time.Now().Add(5 * time.Second)
	for time.Now().Before(limit) && int(s.bufs.lent.Load())*uringBufSize < uringStreamHold {
		selectEvents(t, s, 16, 10*time.Millisecond)
	}
	for range 10 {
		selectEvents(t, s, 16, 5*time.Millisecond)
	}
	// The bound is reached in a harvest; what the kernel received before
	// the cancel reached it comes on top, but far from every buffer.
	require.LessOrEqual(t, int(s.bufs.lent.Load()), uringStreamHold/uringBufSize,
		"the Stream went on receiving past its bound")
	got := readStreamAll(t, s, st, len(msg))
	require.True(t, bytes.Equal(msg, got), "bytes differ")
	<-done
}

// starveAndRead adds 40 streams, more than the buffers hold at once (40 x
// 32 KiB against 256 buffers of 2 KiB), calls added, writes 32 KiB into
// each, and reads each whole and in order.
func starveAndRead(t *testing.T, s *uringSelector, added func()) {
	t.Helper()
	const n = 40
	pairs := make([]*fdPair, n)
	streams := make([]Stream, n)
	for i := range n {
		pairs[i] = newSocketpair(t)
		streams[i] = addStream(t, s, pairs[i].a, uint64(i+1), Readable, Edge)
	}
	added()
	msg := bytes.Repeat([]byte("0123456789abcdef"), 2<<10) // 32 KiB
	for i := range n {
		_, err := unix.Write(pairs[i].b, msg)
		require.NoError(t, err)
	}
	for i := range n {
		require.Equal(t, msg, readStreamAll(t, s, streams[i], len(msg)), "stream %d", i)
	}
}

// More streams than buffers: receives that find the ring empty (ENOBUFS)
// go on once readers give buffers back, and every stream gets all of its
// bytes.
func TestUringStreamStarvedReceivesResume(t *testing.T) {
	s := openStreamsOrSkip(t)
	starveAndRead(t, s, func() {})
	s.mu.Lock()
	dry := s.ranDry
	s.mu.Unlock()
	require.Positive(t, dry, "the ring never ran dry: the test tests nothing")
	require.Zero(t, s.bufs.lent.Load())
}

// CloseWrite sends what is queued first, then the FIN.
func TestUringStreamCloseWriteAfterQueue(t *testing.T) {
	s := openStreamsOrSkip(t)
	p := newSocketpair(t)
	st := addStream(t, s, p.a, 1, Readable|Writable, Edge)
	msg := bytes.Repeat([]byte("q"), 50<<10)
	n, err := st.Write(msg)
	require.NoError(t, err)
	require.Equal(t, len(msg), n)
	require.NoError(t, st.(*uringStream).CloseWrite())
	_, err = st.Write([]byte("late"))
	require.ErrorIs(t, err, unix.EPIPE)
	var got []byte
	buf := make([]byte, 64<<10)
	limit := time.Now().Add(5 * time.Second)
	for time.Now().Before(limit) {
		selectEvents(t, s, 16, 5*time.Millisecond)
		m, err := unix.Read(p.b, buf)
		if err == unix.EAGAIN {
			continue
		}
		require.NoError(t, err)
		if m == 0 {
			require.Equal(t, msg, got)
			return
		}
		got = append(got, buf[:m]...)
	}
	t.Fatalf("no FIN after %d of %d bytes", len(got), len(msg))
}

// A full queue: Write takes what fits and says EAGAIN; the Writable edge
// comes once sends made room (after Drained).
func TestUringStreamWriteBackPressure(t *testing.T) {
	s := openStreamsOrSkip(t)
	p := newSocketpair(t)
	st := addStream(t, s, p.a, 1, Writable, Edge)
	require.NotZero(t, waitEvent(t, s, 1).Ready&Writable)
	chunk := make([]byte, 64<<10)
	total := 0
	for {
		n, err := st.Write(chunk)
		total += n
		if err == unix.EAGAIN {
			break
		}
		require.NoError(t, err)
		selectEvents(t, s, 16, 0)
	}
	require.NoError(t, s.Drained(p.a, Writable))
	requireNoEvent(t, s, 1) // the peer reads nothing: no room comes
	drained := 0
	buf := make([]byte, 256<<10)
	limit := time.Now().Add(5 * time.Second)
	for time.Now().Before(limit) {
		if m, err := unix.Read(p.b, buf); err == nil {
			drained += m
		}
		evs := selectEvents(t, s, 16, 5*time.Millisecond)
		if ev, ok := eventFor(evs, 1); ok {
			require.NotZero(t, ev.Ready&Writable)
			require.Positive(t, drained)
			return
		}
	}
	t.Fatalf("no Writable after the peer read %d of %d bytes", drained, total)
}

// A reset by the peer is Error, and Read returns it once, then the end.
func TestUringStreamReset(t *testing.T) {
	s := openStreamsOrSkip(t)
	ln, err := unix.Socket(unix.AF_INET, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
	require.NoError(t, err)
	defer unix.Close(ln)
	require.NoError(t, unix.Bind(ln, &unix.SockaddrInet4{Addr: [4]byte{127, 0, 0, 1}}))
	require.NoError(t, unix.Listen(ln, 1))
	sa, err := unix.Getsockname(ln)
	require.NoError(t, err)
	cli, err := unix.Socket(unix.AF_INET, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
	require.NoError(t, err)
	require.NoError(t, unix.Connect(cli, sa))
	srv, _, err := unix.Accept4(ln, unix.SOCK_NONBLOCK|unix.SOCK_CLOEXEC)
	require.NoError(t, err)
	defer unix.Close(srv)
	st := addStream(t, s, srv, 1, Readable, Edge)
	require.NoError(t, unix.SetsockoptLinger(cli, unix.SOL_SOCKET, unix.SO_LINGER, &unix.Linger{Onoff: 1, Linger: 0}))
	require.NoError(t, unix.Close(cli))
	limit := time.Now().Add(5 * time.Second)
	for time.Now().Before(limit) {
		ev, ok := eventFor(selectEvents(t, s, 16, 100*time.Millisecond), 1)
		if !ok {
			continue
		}
		require.NotZero(t, ev.Ready&Error, "%#x", ev.Ready)
		_, err = st.Read(make([]byte, 8))
		require.ErrorIs(t, err, unix.ECONNRESET)
		n, err := st.Read(make([]byte, 8))
		require.NoError(t, err)
		require.Zero(t, n)
		require.NoError(t, s.Delete(srv))
		return
	}
	t.Fatal("no event for the reset")
}

// Closing the selector keeps what a Stream received readable, and the
// descriptor is the caller's again afterwards.
func TestUringStreamSelectorCloseKeepsBytes(t *testing.T) {
	if !slices.Contains(Backends(), BackendUring) {
		t.Skip("io_uring missing or refused on this kernel")
	}
	sel, err := NewWithOptions(BackendUring, Options{Completion: true})
	require.NoError(t, err)
	s := sel.(*uringSelector)
	p := newSocketpair(t)
	st := addStream(t, s, p.a, 1, Readable, Edge)
	_, err = unix.Write(p.b, []byte("kept"))
	require.NoError(t, err)
	waitEvent(t, s, 1)
	require.NoError(t, s.Close())
	_, err = unix.Write(p.b, []byte("+direct"))
	require.NoError(t, err)
	got := make([]byte, 0, 16)
	buf := make([]byte, 16)
	for len(got) < len("kept+direct") {
		n, err := st.Read(buf)
		require.NoError(t, err)
		got = append(got, buf[:n]...)
	}
	require.Equal(t, "kept+direct", string(got))
}
