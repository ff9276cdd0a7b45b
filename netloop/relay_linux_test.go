package netloop

import (
	"os"
	"strconv"
	"testing"

	"github.com/stretchr/testify/require"
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
