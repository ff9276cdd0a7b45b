//go:build linux

package sys

import (
	"bytes"
	"math/rand/v2"
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
