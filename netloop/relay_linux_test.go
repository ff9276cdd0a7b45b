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
	ps := relayPipes{}
	for _, d := range []*relayDir{&rel.ab, &rel.ba} {
		ref := d.t.Load()
		require.NotNil(t, ref, "a direction that carried bytes has no transport")
		p, pipe := ref.transport.(*pipeTransport)
		require.Equal(t, !rc.copy && !rc.noFd, pipe, "transport %T", ref.transport)
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
// instead, and its bytes arrive intact.
func TestRelaySpliceRefused(t *testing.T) {
	ep, err := unix.EpollCreate1(unix.EPOLL_CLOEXEC)
	require.NoError(t, err)
	t.Cleanup(func() { _ = unix.Close(ep) })
	l := newLoop(t, eventloop.Config{})
	sa, front := streamPair(t, "tcp")
	sb, back := streamPair(t, "tcp")
	ha, hb := newRelayEnd(), newRelayEnd()
	a, err := Add(l, refusingStream{noFdStream{sa}, ep}, ha, Config{})
	require.NoError(t, err)
	b, err := Add(l, refusingStream{noFdStream{sb}, ep}, hb, Config{})
	require.NoError(t, err)
	require.NoError(t, Relay(a, b))
	rel := relayOf(a)
	start(t, l, nil)
	require.NoError(t, front.SetDeadline(time.Now().Add(waitLimit)))
	require.NoError(t, back.SetDeadline(time.Now().Add(waitLimit)))
	s := stream{seed: 5, n: 1 << 20}
	fr := pump(front, s, true)
	n, sum, err := readSum(back)
	require.NoError(t, err)
	require.Equal(t, s.n, n)
	require.Equal(t, s.sum(), sum)
	_, isRing := rel.ab.t.Load().transport.(*ringTransport)
	require.True(t, isRing, "the refused direction does not copy: %T", rel.ab.t.Load().transport)
	closeWrite(t, back)
	require.NoError(t, (<-fr).readErr)
	require.NoError(t, recvErr(t, ha.closed))
	require.NoError(t, recvErr(t, hb.closed))
}
