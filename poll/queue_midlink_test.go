//go:build unipoll_debug

package poll

import (
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// A Registration whose SetReadiness returned before Poll began is reported
// by that Poll, even when a producer that overlaps the call is half-way
// through linking its own node behind it. The node before a half-done link
// cannot be unlinked until the link is done; Poll used to return without
// it (with the events in front of it), which TestStateMachineCrowd caught
// once in CI as a lost event.
//
// Built only with unipoll_debug: the hooks that hold a producer inside its
// link, and that see the consumer wait for it, exist only there.
func TestQueueHalfDoneLinkHidesNoEarlierNode(t *testing.T) {
	p := newPollConfig(t, Config{})
	_, a := newRegistered(t, p, 1, Readable, Edge)
	_, b := newRegistered(t, p, 2, Readable, Edge)
	rc, c := newRegistered(t, p, 3, Readable, Edge)
	cn, err := rc.node()
	require.NoError(t, err)
	ev := NewEvents(8)
	_, err = p.Poll(ev, 0) // whatever Register linked is drained
	require.NoError(t, err)

	paused, release := make(chan struct{}), make(chan struct{})
	var releaseOnce sync.Once
	free := func() { releaseOnce.Do(func() { close(release) }) }
	t.Cleanup(free)
	hold := func(n *regNode) {
		if n == cn {
			close(paused)
			<-release
		}
	}
	waits := 0
	wait := func() { waits++; free() }
	midLink.Store(&hold)
	midLinkWait.Store(&wait)
	t.Cleanup(func() { midLink.Store(nil); midLinkWait.Store(nil) })

	require.NoError(t, a.SetReadiness(Readable))
	require.NoError(t, b.SetReadiness(Readable))
	setC := make(chan error, 1)
	go func() { setC <- c.SetReadiness(Readable) }()
	select {
	case <-paused:
	case <-time.After(eventWait):
		t.Fatal("the producer of token 3 never reached its link")
	}

	n, err := p.Poll(ev, eventWait)
	require.NoError(t, err)
	var toks []Token
	for e := range ev.All() {
		toks = append(toks, e.Token)
	}
	require.Equal(t, 3, n, "events %v", toks)
	require.ElementsMatch(t, []Token{1, 2, 3}, toks,
		"token 2 was ready before Poll began and must not hide behind token 3's half-done link")
	require.Positive(t, waits, "the consumer never waited for the half-done link")
	require.NoError(t, <-setC)
}

// The same when the push behind the last node begins after the drain has
// marked its goal: the goal itself (token 2, set before Poll began) cannot
// be unlinked until that push links behind it, and Poll must wait for it
// rather than return without token 2. The hook after the mark starts token
// 3's push and holds it inside its link; CI's TestStateMachineCrowd caught
// the drain returning there.
func TestQueueHalfDoneLinkBehindTheGoal(t *testing.T) {
	p := newPollConfig(t, Config{})
	_, a := newRegistered(t, p, 1, Readable, Edge)
	_, b := newRegistered(t, p, 2, Readable, Edge)
	rc, c := newRegistered(t, p, 3, Readable, Edge)
	cn, err := rc.node()
	require.NoError(t, err)
	ev := NewEvents(8)
	// No Poll before: a node a Poll has reported stays in its held list
	// for a while, and a SetReadiness then links nothing.
	require.NoError(t, a.SetReadiness(Readable))
	require.NoError(t, b.SetReadiness(Readable))

	paused, release := make(chan struct{}), make(chan struct{})
	var releaseOnce, startOnce sync.Once
	free := func() { releaseOnce.Do(func() { close(release) }) }
	t.Cleanup(free)
	hold := func(n *regNode) {
		if n == cn {
			close(paused)
			<-release
		}
	}
	setC := make(chan error, 1)
	start := func() {
		startOnce.Do(func() {
			go func() { setC <- c.SetReadiness(Readable) }()
			<-paused // token 3's push has exchanged the head, after the mark
		})
	}
	waits := 0
	wait := func() { waits++; free() }
	midLink.Store(&hold)
	midLinkWait.Store(&wait)
	afterMark.Store(&start)
	t.Cleanup(func() { midLink.Store(nil); midLinkWait.Store(nil); afterMark.Store(nil) })

	_, err = p.Poll(ev, eventWait)
	require.NoError(t, err)
	var toks []Token
	for e := range ev.All() {
		toks = append(toks, e.Token)
	}
	require.Contains(t, toks, Token(2), "token 2 was ready before Poll began; got %v", toks)
	require.Positive(t, waits, "the consumer never waited for the link behind its goal")
	free()
	require.NoError(t, <-setC)
}
