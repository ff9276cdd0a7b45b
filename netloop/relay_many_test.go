package netloop

import (
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/unipoll/unipoll/eventloop"
	"github.com/unipoll/unipoll/internal/base/prefetch"
)

// manyPairs puts the Loop past the size from which it asks its sources
// for their lines ahead of their calls (eventloop's ahead.go): each relay
// call's Conn, relay and peer are then named before the call, read from
// outside it.
const manyPairs = 300

// Many inline relays on one Loop at once, bytes both ways, small and
// large bursts: every stream arrives intact, and every Conn closes with
// nil. Under -race, the hints read from outside the Conns' calls show
// here if they read anything they may not.
func TestRelayManyPairs(t *testing.T) {
	l := newLoop(t, eventloop.Config{Workers: 1})
	type pairRig struct {
		front, back <-chan pumped
		up, down    stream
		ha, hb      *relayEnd
	}
	rigs := make([]pairRig, manyPairs)
	var conns []*Conn
	deadline := time.Now().Add(2 * waitLimit)
	for i := range rigs {
		sa, front := streamPair(t, "tcp")
		sb, back := streamPair(t, "tcp")
		ha, hb := newRelayEnd(), newRelayEnd()
		a, err := Add(l, sa, ha, Config{})
		require.NoError(t, err)
		b, err := Add(l, sb, hb, Config{})
		require.NoError(t, err)
		require.NoError(t, Relay(a, b))
		conns = append(conns, a, b)
		require.NoError(t, front.SetDeadline(deadline))
		require.NoError(t, back.SetDeadline(deadline))
		size := int64(4 << 10) // small bursts: the copy
		if i%3 == 0 {
			size = 256 << 10 // large ones: the pipe
		}
		rigs[i] = pairRig{up: stream{seed: uint64(2 * i), n: size}, down: stream{seed: uint64(2*i + 1), n: size + 77}, ha: ha, hb: hb}
		rigs[i].front = pump(front, rigs[i].up, true)
		rigs[i].back = pump(back, rigs[i].down, true)
	}
	start(t, l, nil)
	// The Loop's hints come between calls, from the dispatch; these come
	// from another goroutine at any time, both stages, so that -race sees
	// every read a hint makes against the calls' writes.
	stop, hinted := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(hinted)
		for {
			for _, c := range conns {
				select {
				case <-stop:
					return
				default:
				}
				(*source)(c).PrefetchHint(prefetch.Far)
				(*source)(c).PrefetchHint(prefetch.Near)
			}
		}
	}()
	defer func() { close(stop); <-hinted }()
	for i, r := range rigs {
		fr, br := <-r.front, <-r.back
		what := fmt.Sprintf("pair %d", i)
		require.NoError(t, fr.sendErr, what)
		require.NoError(t, br.sendErr, what)
		require.NoError(t, fr.readErr, what)
		require.NoError(t, br.readErr, what)
		require.Equal(t, r.down.n, fr.n, what)
		require.Equal(t, r.up.n, br.n, what)
		require.Equal(t, r.down.sum(), fr.sum, what)
		require.Equal(t, r.up.sum(), br.sum, what)
		require.NoError(t, recvErr(t, r.ha.closed), what)
		require.NoError(t, recvErr(t, r.hb.closed), what)
	}
}
