package poll

// White-box tests of the consumer's held list (held.go): a reported node
// stays linked and is reported again without a push; an idle one is let go
// after heldIdleScans calls; nothing is held while the consumer blocks; and
// the ring keeps its order across growth.

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// heldState reports whether n is held by p's consumer and its state word.
// Call it with no Poll in progress.
func heldState(p *Poll, n *regNode) (held bool, state uint64) {
	p.pollMu.Lock()
	defer p.pollMu.Unlock()
	for i := range p.held.Len() {
		if p.held.At(i) == n {
			held = true
		}
	}
	return held, n.state.Load()
}

func TestHeldNodeReportedAgainWithoutPush(t *testing.T) {
	forEachBackend(t, func(t *testing.T, newPoll newPollFunc) {
		forModes(t, []string{"Edge", "Level"}, func(t *testing.T, opts PollOpt) {
			p := newPoll(t)
			r, s, ev := reported(t, p, Readable, opts)

			held, st := heldState(p, r.n)
			require.True(t, held, "a reported node stays held")
			require.NotZero(t, st&stQueued, "a held node stays queued")
			require.Zero(t, st&stOwed, "reporting clears fired")

			// Setting it again while held links nothing into the queue:
			// the consumer finds it by looking at the held list.
			require.NoError(t, s.SetReadiness(Readable))
			require.False(t, p.queue.pending(), "a held node was pushed")
			require.NotZero(t, r.n.state.Load()&stOwed)
			requireNext(t, p, ev, 1, Readable)
		})
	})
}

func TestHeldNodeReleasedWhenIdle(t *testing.T) {
	forEachBackend(t, func(t *testing.T, newPoll newPollFunc) {
		p := newPoll(t)
		r, s, ev := reported(t, p, Readable, Edge)

		// Polls that do not block leave it held for heldIdleScans calls,
		// then let it go.
		for i := range heldIdleScans {
			held, _ := heldState(p, r.n)
			require.True(t, held, "released after %d idle calls, want %d", i, heldIdleScans)
			require.Empty(t, pollEvents(t, p, ev, 0))
		}
		held, st := heldState(p, r.n)
		require.False(t, held, "still held after %d idle calls", heldIdleScans)
		require.Zero(t, st&(stQueued|stOwed), "released node still marked queued or fired")

		// Released, it is linked again by the next edge.
		require.NoError(t, s.SetReadiness(Readable))
		require.True(t, p.queue.pending(), "edge on a released node was not pushed")
		requireNext(t, p, ev, 1, Readable)
	})
}

func TestHeldNodesReleasedBeforeBlocking(t *testing.T) {
	forEachBackend(t, func(t *testing.T, newPoll newPollFunc) {
		p := newPoll(t)
		r, s, ev := reported(t, p, Readable, Edge)

		// A call that may block first releases what it holds: a
		// producer that sets the node later must find it unlinked, link
		// it and wake the Poll.
		res := pollAsync(p, ev, eventWait)
		waitAsleep(t, p)
		require.Zero(t, r.n.state.Load()&stQueued, "node still queued while the consumer sleeps")
		w := p.Stats().WakerWrites
		require.NoError(t, s.SetReadiness(Readable))
		got := <-res
		require.NoError(t, got.err)
		require.Equal(t, []Event{{Token: 1, Ready: Readable}}, got.evs)
		require.Greater(t, p.Stats().WakerWrites, w, "the sleeping Poll was not woken by a write")
	})
}

func TestHeldNodeFiredBeforeBlockingIsReported(t *testing.T) {
	forEachBackend(t, func(t *testing.T, newPoll newPollFunc) {
		p := newPoll(t)
		ev := NewEvents(1)
		_, s1 := newRegistered(t, p, 1, Readable, Edge)
		_, s2 := newRegistered(t, p, 2, Readable, Edge)
		require.NoError(t, s1.SetReadiness(Readable))
		require.NoError(t, s2.SetReadiness(Readable))
		// A buffer of one: token 1 now, token 2 held and fired.
		requireNext(t, p, ev, 1, Readable)
		// Set token 1 again while held: a blocking call must report both
		// in turn, never sleep on them.
		require.NoError(t, s1.SetReadiness(Readable))
		start := time.Now()
		a := pollEvents(t, p, ev, eventWait)
		b := pollEvents(t, p, ev, eventWait)
		require.Less(t, time.Since(start), eventWait/2, "a blocking Poll slept on held, fired nodes")
		require.ElementsMatch(t, []Event{{Token: 2, Ready: Readable}, {Token: 1, Ready: Readable}}, append(a, b...))
	})
}

func TestHeldNodeDeregisteredAndReregistered(t *testing.T) {
	forEachBackend(t, func(t *testing.T, newPoll newPollFunc) {
		p := newPoll(t)
		r, s, ev := reported(t, p, Readable|Writable, Edge)

		// Deregistered while held: never reported, and let go by the next
		// call.
		require.NoError(t, p.Deregister(r))
		require.NoError(t, s.SetReadiness(Readable))
		require.Empty(t, pollEvents(t, p, ev, 0))
		held, st := heldState(p, r.n)
		require.False(t, held, "a deregistered node is still held")
		require.Zero(t, st&stQueued)

		// Registered again while ready: reported at once under the new
		// token (rule 5), whether or not the consumer still holds it.
		require.NoError(t, p.Register(r, 2, Readable, Edge))
		requireNext(t, p, ev, 2, Readable)
		held, _ = heldState(p, r.n)
		require.True(t, held)
		require.NoError(t, p.Reregister(r, 3, Writable, Edge))
		require.Empty(t, pollEvents(t, p, ev, 0), "not ready for the new interest")
		require.NoError(t, s.SetReadiness(Writable))
		requireNext(t, p, ev, 3, Writable)
		require.NoError(t, p.Reregister(r, 4, Readable|Writable, Edge))
		requireNext(t, p, ev, 4, Readable|Writable)
	})
}

func TestHeldNodeClosedIsForgotten(t *testing.T) {
	p := newPollConfig(t, Config{})
	r, _, ev := reported(t, p, Readable, Level)
	require.NoError(t, r.Close())
	require.Empty(t, pollEvents(t, p, ev, 0), "a closed node was reported")
	held, _ := heldState(p, r.n)
	require.False(t, held, "a closed node is still held")
	requireQueueEmpty(t, p)
}

// TestHeldRingTrimmed: after a burst that held many nodes, a Poll that goes
// to sleep with nothing held gives the ring's memory back.
func TestHeldRingTrimmed(t *testing.T) {
	p := newPollConfig(t, Config{})
	const regs = 3 * heldKeep
	ev := NewEvents(regs)
	sets := make([]*SetReadiness, regs)
	for i := range sets {
		_, sets[i] = newRegistered(t, p, Token(i), Readable, Edge)
		require.NoError(t, sets[i].SetReadiness(Readable))
	}
	require.Len(t, pollEvents(t, p, ev, 0), regs)
	p.pollMu.Lock()
	grown := p.held.Cap()
	p.pollMu.Unlock()
	require.Greater(t, grown, heldKeep, "the ring did not grow to hold the burst")

	require.Empty(t, pollEvents(t, p, ev, time.Millisecond)) // releases all, then sleeps
	p.pollMu.Lock()
	defer p.pollMu.Unlock()
	require.Zero(t, p.held.Len())
	require.LessOrEqual(t, p.held.Cap(), heldKeep, "an empty ring kept its memory")
}

// reported registers a Registration with p under token 1 for interest in
// mode, makes it Readable and takes that event: what the held-node tests
// start from.
func reported(t *testing.T, p *Poll, interest Ready, mode PollOpt) (*Registration, *SetReadiness, *Events) {
	t.Helper()
	ev := NewEvents(4)
	r, s := newRegistered(t, p, 1, interest, mode)
	require.NoError(t, s.SetReadiness(Readable))
	requireNext(t, p, ev, 1, Readable)
	return r, s, ev
}
