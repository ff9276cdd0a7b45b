//go:build unix

package socket

import (
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestCloseOnExecAndNonblocking(t *testing.T) {
	w := newPoller(t)
	client, server := tcpPair(t, w)
	ln, err := ListenTCP("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	closeIt(t, ln)
	udp, err := ListenUDP("udp", "127.0.0.1:0")
	require.NoError(t, err)
	closeIt(t, udp)
	udpc, err := DialUDP("udp", udp.LocalAddr().String())
	require.NoError(t, err)
	closeIt(t, udpc)
	a, b, err := Pair()
	require.NoError(t, err)
	closeIt(t, a)
	closeIt(t, b)
	path := filepath.Join(t.TempDir(), "s")
	uln, err := ListenUnix(path)
	require.NoError(t, err)
	closeIt(t, uln)
	uc, err := DialUnix(path)
	require.NoError(t, err)
	closeIt(t, uc)

	for _, s := range []closer{client, server, ln, udp, udpc, a, b, uln, uc} {
		requireCloexec(t, s.Fd())
		requireNonblock(t, s.Fd())
	}
}
