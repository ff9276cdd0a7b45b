//go:build linux

package sys

import (
	"bytes"
	"crypto/rand"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"
)

// A reader on a goroutine of its own, reading while the Select harvests,
// as an edge-triggered caller does (to EAGAIN, then Drained, then the next
// Readable): the Stream pauses at every receive that reaches its cap and
// resumes at the Reads, hundreds of times, and it must never be left
// paused with no receive in the kernel and no Readable to come (the
// reader would wait for ever). The narrowest such window, a Read that
// empties the Stream between received and the pause (S7's review), is
// closed by recvDoneLocked's look at low; this test seldom reaches it,
// but covers the pause and the resume under a concurrent reader.
func TestUringStreamPauseRacesRead(t *testing.T) {
	s := openStreamsOrSkip(t)
	p := newSocketpair(t)
	st := addStream(t, s, p.a, 1, Readable, Edge)
	msg := make([]byte, 16<<20)
	_, _ = rand.Read(msg)
	var written atomic.Int64
	go writeCounting(p.b, msg, &written)

	readable := make(chan struct{}, 1)
	stop := make(chan struct{})
	selDone := make(chan error, 1)
	go func() {
		buf := make([]Event, 16)
		for {
			select {
			case <-stop:
				selDone <- nil
				return
			default:
			}
			n, _, err := s.Select(buf, 10*time.Millisecond)
			if err != nil {
				selDone <- err
				return
			}
			for _, ev := range buf[:n] {
				if ev.Key == 1 && ev.Ready&Readable != 0 {
					select {
					case readable <- struct{}{}:
					default:
					}
				}
			}
		}
	}()
	got := make([]byte, 0, len(msg))
	buf := make([]byte, 3000)
	stalled := false
	for len(got) < len(msg) {
		n, err := st.Read(buf)
		if err == unix.EAGAIN {
			// The caller's EAGAIN ends the edge (emulated here).
			require.NoError(t, s.Drained(p.a, Readable))
			select {
			case <-readable:
			case <-time.After(5 * time.Second):
				stalled = true
			}
			if stalled {
				break
			}
			continue
		}
		require.NoError(t, err)
		require.NotZero(t, n)
		got = append(got, buf[:n]...)
	}
	close(stop)
	require.NoError(t, <-selDone)
	if stalled {
		s.mu.Lock()
		us := st.(*uringStream)
		paused, rx := us.paused, us.rx
		s.mu.Unlock()
		unread, _ := st.Buffered()
		t.Fatalf("no Readable for 5 s after %d of %d bytes (%d written): paused %v, receive in the kernel %v, %d unread",
			len(got), len(msg), written.Load(), paused, rx, unread)
	}
	require.True(t, bytes.Equal(msg, got), "bytes differ")
}
