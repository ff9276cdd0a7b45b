package netloop

import (
	"os"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"

	"github.com/unipoll/unipoll/eventloop"
)

// relayMaxBound is the most a direction's transport may hold.
const relayMaxBound = max(relayPipeMax, relayRingSize)

// relayPipes are a running relay's pipes: descriptor and the file it
// names.
type relayPipes map[int]string

// openPipes checks, while the relay runs, that each direction splices
// through a pipe or copies as the case asks, and returns the pipes.
func openPipes(t *testing.T, r *relayRig, rc relayCase) relayPipes {
	t.Helper()
	rel := relayOf(r.a)
	require.NotNil(t, rel)
	require.NotEqual(t, relayGone, rel, "the relay ended too early")
	require.Equal(t, rc.workers == 1 && !rc.twoLoops, rel.inline, "inline: one Loop, one worker")
	ps := relayPipes{}
	noSplice := rc.copy || rc.noFd || ringIO(r.a) || ringIO(r.b)
	for _, d := range []*relayDir{&rel.ab, &rel.ba} {
		ref := d.t.Load()
		if rel.inline && noSplice {
			// An inline direction that cannot splice reads into the
			// worker's buffer and writes on at once: no transport.
			require.Nil(t, ref, "an inline copy with a transport")
			continue
		}
		if rel.inline && ref == nil {
			// An inline direction splices only once a read has filled
			// the worker's buffer, which a stream that arrives in
			// smaller pieces need not do (TestRelayInlineChoosesPerBurst
			// makes it happen).
			continue
		}
		require.NotNil(t, ref, "a direction that carried bytes has no transport")
		p, pipe := ref.transport.(*pipeTransport)
		require.Equal(t, !noSplice, pipe, "transport %T", ref.transport)
		if pipe {
			for _, fd := range []int{p.r, p.w} {
				target, err := os.Readlink("/proc/self/fd/" + strconv.Itoa(fd))
				require.NoError(t, err)
				ps[fd] = target
			}
		}
	}
	return ps
}

// requireClosed waits for the pipes to be closed: their descriptors name
// other files now, or none.
func (ps relayPipes) requireClosed(t *testing.T) {
	t.Helper()
	eventually(t, "the relay's pipes to be closed", func() bool {
		for fd, name := range ps {
			if target, err := os.Readlink("/proc/self/fd/" + strconv.Itoa(fd)); err == nil && target == name {
				return false
			}
		}
		return true
	})
}

// refusingStream is a socket whose Fd is another descriptor, one that
// splice(2) refuses (an epoll instance): the relay must meet the kernel's
// EINVAL and copy instead.
type refusingStream struct {
	noFdStream
	fd int
}

func (r refusingStream) Fd() int { return r.fd }

// A direction whose first splice the kernel refuses (EINVAL) copies
// instead, and its bytes arrive intact: through the ring where the relay's
// Conns are served by several workers, through the worker's buffer in an
// inline relay (one worker), which then never splices again.
func TestRelaySpliceRefused(t *testing.T) {
	for _, workers := range []int{1, 2} {
		t.Run(strconv.Itoa(workers), func(t *testing.T) {
			ep, err := unix.EpollCreate1(unix.EPOLL_CLOEXEC)
			require.NoError(t, err)
			t.Cleanup(func() { _ = unix.Close(ep) })
			l := newLoop(t, eventloop.Config{Workers: workers})
			sa, front := streamPair(t, "tcp")
			sb, back := streamPair(t, "tcp")
			ha, hb := newRelayEnd(), newRelayEnd()
			a, err := Add(l, refusingStream{noFdStream{sa}, ep}, ha, Config{})
			require.NoError(t, err)
			b, err := Add(l, refusingStream{noFdStream{sb}, ep}, hb, Config{})
			require.NoError(t, err)
			require.NoError(t, Relay(a, b))
			rel := relayOf(a)
			require.NoError(t, front.SetDeadline(time.Now().Add(waitLimit)))
			require.NoError(t, back.SetDeadline(time.Now().Add(waitLimit)))
			s := stream{seed: 5, n: 1 << 20}
			fr := pump(front, s, true)
			// A first read that fills the worker's buffer, so that an
			// inline relay tries to splice the rest: the Loop starts once
			// more than that waits in a's socket.
			eventually(t, "input to wait in the socket", func() bool {
				n, err := unix.IoctlGetInt(sa.(interface{ Fd() int }).Fd(), unix.SIOCINQ)
				return err == nil && n > eventloop.DefaultReadBuffer
			})
			start(t, l, nil)
			n, sum, err := readSum(back)
			require.NoError(t, err)
			require.Equal(t, s.n, n)
			require.Equal(t, s.sum(), sum)
			if workers == 1 {
				require.True(t, rel.inline)
				// The source's own state, read in a call of a's (the
				// back's direction still runs).
				seen := make(chan [2]bool, 1)
				require.NoError(t, a.Async(func(*Conn) {
					seen <- [2]bool{rel.ab.inl.canSplice, rel.ab.t.Load() != nil}
				}))
				got := <-seen
				require.False(t, got[0], "the refused direction tries splice(2) again")
				require.False(t, got[1], "the refused pipe is kept")
			} else {
				_, isRing := rel.ab.t.Load().transport.(*ringTransport)
				require.True(t, isRing, "the refused direction does not copy: %T", rel.ab.t.Load().transport)
			}
			closeWrite(t, back)
			require.NoError(t, (<-fr).readErr)
			require.NoError(t, recvErr(t, ha.closed))
			require.NoError(t, recvErr(t, hb.closed))
		})
	}
}

// ringIO reports whether c's bytes go through its Poll's backend
// (socket.TCPConn.Completion: UNIPOLL_COMPLETION=1 on uring), where a
// relay copies and never splices the descriptor.
func ringIO(c *Conn) bool {
	cm, ok := c.Stream().(interface{ Completion() bool })
	return ok && cm.Completion()
}
