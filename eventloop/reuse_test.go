package eventloop

import (
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"

	"github.com/unipoll/unipoll/poll"
)

// The fd-reuse hazard, with real descriptors: a source's event is on its
// way (queued in the Loop) when the source is removed,
// its descriptor closed, a new descriptor opened with the same number and
// added with a new handler. The old event must not reach the new handler.
// In both cases below the descriptor number is the same, and the new
// handler is called only for data written to the new pipe.

// Same iteration: the old and new incarnations meet within one batch. The
// remover (higher priority, so it runs first) removes the old source,
// closes its descriptor at once (against the advice to close in Removed)
// and adds the new one; the old source's event, next in the batch, finds
// its entry removed.
func TestFdReuseSameIteration(t *testing.T) {
	l := newLoop(t, Config{})
	r1, w1 := pipe(t)
	defer unix.Close(w1)
	oldCalls, newCalls := &recorder{}, &recorder{}
	var newFds [2]int
	var newTok atomic.Uint64
	var oldTok poll.Token
	remover := &recorder{next: func(poll.Event) Action {
		require.NoError(t, l.Remove(oldTok))
		require.NoError(t, unix.Close(r1))
		newFds[0], newFds[1] = pipeAt(t, r1)
		tok, err := l.Add(poll.Fd(newFds[0]), poll.Readable, poll.Edge, newCalls)
		require.NoError(t, err)
		newTok.Store(uint64(tok))
		return Keep
	}}
	startRemoval(t, l, r1, w1, oldCalls, remover, &oldTok)
	eventually(t, "the new source", func() bool { return newTok.Load() != 0 })
	defer unix.Close(newFds[0])
	defer unix.Close(newFds[1])
	quiesce(t, l)
	require.Equal(t, 0, oldCalls.count(), "the removed source was called")
	require.Equal(t, 0, newCalls.count(), "the new source was called for the old one's event")
	require.Positive(t, l.Stats().Dropped, "the old event was never seen")
	checkOwnEvent(t, l, newCalls, poll.Token(newTok.Load()), newFds[1])
}

// Entry reused: the old source's event waits in the run queue (with one
// call per iteration, a higher-priority source that stays ready takes
// every turn) while the old source is removed, its Removed closes the
// descriptor, and the test opens a new one with the same number and adds
// it: it takes the very same entry (same index, next generation). When the
// old event's turn comes, its generation no longer matches.
func TestFdReuseEntryReused(t *testing.T) {
	l := newLoop(t, Config{MaxEventsPerIteration: 1})
	r1, w1 := pipe(t)
	defer unix.Close(w1)
	hog := newRegSource(t)
	_, err := l.Add(hog.reg, poll.Readable, poll.Level, &recorder{}, Priority(2))
	require.NoError(t, err)
	var oldTok poll.Token
	remover := &recorder{next: func(poll.Event) Action {
		require.NoError(t, l.Remove(oldTok))
		require.NoError(t, hog.set.SetReadiness(poll.Readable))
		return Keep
	}}
	closed := make(chan struct{})
	oldCalls := &recorder{}
	oldH := &removedFunc{recorder: oldCalls, f: func() {
		require.NoError(t, unix.Close(r1))
		close(closed)
	}}
	startRemoval(t, l, r1, w1, oldH, remover, &oldTok)
	<-closed
	// The entry goes back to the table once Removed has returned: wait
	// for that, so that Add takes it.
	eventually(t, "the old entry to be given back", func() bool {
		l.tab.mu.Lock()
		defer l.tab.mu.Unlock()
		return len(l.tab.free) > l.tab.head
	})
	r2, w2 := pipeAt(t, r1)
	defer unix.Close(r2)
	defer unix.Close(w2)
	newCalls := &recorder{}
	newTok, err := l.Add(poll.Fd(r2), poll.Readable, poll.Edge, newCalls)
	require.NoError(t, err)
	oi, og := splitToken(oldTok)
	ni, ng := splitToken(newTok)
	require.Equal(t, oi, ni, "the new source did not take the old entry")
	require.NotEqual(t, og, ng)
	// Let the queued old event have its turn.
	stale := l.Stats().Stale
	require.NoError(t, hog.set.UnsetReadiness(poll.Readable))
	eventually(t, "the old event's turn", func() bool { return l.Stats().Stale > stale || newCalls.count() > 0 })
	quiesce(t, l)
	require.Equal(t, 0, oldCalls.count(), "the removed source was called")
	require.Equal(t, 0, newCalls.count(), "the new source was called for the old one's event")
	checkOwnEvent(t, l, newCalls, newTok, w2)
}

// pipeAt returns a new pipe whose read end has the number fd, which the
// caller has just closed. The kernel hands out the lowest free number,
// which is fd unless a lower one was freed meanwhile (a goroutine of an
// earlier test closing late, on a loaded machine); then the read end is
// moved onto fd with dup2, so that the scenario is always the one under
// test: the same number for the new source.
func pipeAt(t *testing.T, fd int) (r, w int) {
	r, w = pipe(t)
	if r == fd {
		return r, w
	}
	if _, err := unix.FcntlInt(uintptr(fd), unix.F_GETFD, 0); err != unix.EBADF {
		t.Fatalf("descriptor %d was taken by someone else before the test could reuse it (fcntl: %v)", fd, err)
	}
	require.NoError(t, unix.Dup2(r, fd))
	unix.CloseOnExec(fd)
	require.NoError(t, unix.Close(r))
	return fd, w
}

// checkOwnEvent writes to the new source's pipe and checks that its
// handler gets exactly that event.
func checkOwnEvent(t *testing.T, l *Loop, rec *recorder, tok poll.Token, w int) {
	t.Helper()
	_, err := unix.Write(w, []byte("new"))
	require.NoError(t, err)
	eventually(t, "the new source's own event", func() bool { return rec.count() >= 1 })
	quiesce(t, l)
	rec.mu.Lock()
	calls := append([]poll.Event(nil), rec.calls...)
	rec.mu.Unlock()
	require.Equal(t, []poll.Event{{Token: tok, Ready: poll.Readable}}, calls)
	rec.check(t)
}

// removedFunc is a recorder with an action in Removed.
type removedFunc struct {
	*recorder
	f func()
}

func (r *removedFunc) Removed(l *Loop, t poll.Token) {
	r.recorder.Removed(l, t)
	r.f()
}

// startRemoval adds the pipe's read end r (the old source, handled by
// oldH, its token stored in *oldTok before the Loop runs) and a trigger
// source handled by remover at priority 1, makes both ready (a write on
// w, the trigger set) and runs the Loop: its first Poll returns both, and
// remover runs first.
func startRemoval(t *testing.T, l *Loop, r, w int, oldH, remover SourceHandler, oldTok *poll.Token) {
	t.Helper()
	var err error
	*oldTok, err = l.Add(poll.Fd(r), poll.Readable, poll.Edge, oldH)
	require.NoError(t, err)
	trigger := newRegSource(t)
	_, err = l.Add(trigger.reg, poll.Readable, poll.Edge, remover, Priority(1))
	require.NoError(t, err)
	_, err = unix.Write(w, []byte("old"))
	require.NoError(t, err)
	require.NoError(t, trigger.set.SetReadiness(poll.Readable))
	start(t, l, nil)
}
