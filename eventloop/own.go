package eventloop

import (
	"errors"

	"github.com/unipoll/unipoll/channel"
	"github.com/unipoll/unipoll/poll"
	"github.com/unipoll/unipoll/timer"
)

// The Loop's own sources, all wired here: made and registered by New,
// run by the engine's call step (engine.go) within the iteration's
// budget, closed by release.
//
//   - wake, a Registration: Shutdown, Close, a Remove that leaves Removed
//     to Run, Trigger and WakePollers make it ready so that a Poll in
//     progress returns. Its call does nothing: the iteration that follows
//     does the work.
//   - post, a channel Receiver of the functions Post queues (post.go).
//   - timer, a timer.Timer on the Poll's own wheel, of the functions
//     AfterFunc queues (afterfunc.go), netloop's Conn deadlines among
//     them.
//
// Post and timer are registered Edge: reported again only once drained.
// When the budget stops a run early, the call asks to be queued again
// (more), as a handler's Again does.

// ownSource is the call of one of the Loop's own sources: it does up to
// budget units of work and reports how many it did and whether more wait.
type ownSource func(l *Loop, budget int) (n int, more bool)

// ownSources is the number of the Loop's own entries: wake, post, timer.
// New adds them first, to an empty table, so they are the entries of
// index 0 to 2, and they are never removed: the index alone tells them
// apart, without a look at fields that a reuse of the entry rewrites.
const ownSources = 3

// isOwn reports whether e is one of the Loop's own entries, which the
// methods that take a token refuse.
func isOwn(e *entry) bool { return e.idx < ownSources }

// addOwnSources makes the Loop's own sources and puts them on it.
func (l *Loop) addOwnSources() error {
	l.wake, l.wakeSet = poll.NewRegistration()
	l.postTx, l.postRx = channel.New[func(*Loop)]()
	tm, err := timer.New[func(*Loop)]()
	if err != nil {
		return err
	}
	l.tm = tm
	for _, s := range []struct {
		src poll.Evented
		run ownSource
	}{
		{l.wake, runWake},
		{l.postRx, runPosted},
		{l.tm, runTimers},
	} {
		if _, err := l.add(s.src, poll.Readable, poll.Edge, nil, s.run, addConfig{}); err != nil {
			return err
		}
	}
	return nil
}

// closeOwnSources closes what addOwnSources made.
func (l *Loop) closeOwnSources() error {
	var errs []error
	if l.postRx != nil {
		errs = append(errs, ignoreClosed(l.postRx.Close()), ignoreClosed(l.postTx.Close()))
	}
	if l.wake != nil {
		errs = append(errs, ignoreClosed(l.wake.Close()))
	}
	if l.tm != nil {
		errs = append(errs, ignoreClosed(l.tm.Close()))
	}
	return errors.Join(errs...)
}

// wakeUp makes a Poll in progress return, or the next one not block.
func (l *Loop) wakeUp() { _ = l.wakeSet.SetReadiness(poll.Readable) }

func runWake(*Loop, int) (int, bool) { return 0, false }

// runPosted runs up to budget posted functions. ErrEmpty ends it: the
// next Send is a new edge.
func runPosted(l *Loop, budget int) (n int, more bool) {
	for n < budget {
		f, err := l.postRx.TryRecv()
		if err != nil {
			return n, false
		}
		n++
		l.stats.tasks.Add(1)
		f(l)
	}
	return n, true
}

// runTimers runs up to budget expired AfterFunc functions, earliest
// deadline first. The Timer's Poll returning false ends it: the next
// expiry is a new edge.
func runTimers(l *Loop, budget int) (n int, more bool) {
	for n < budget {
		f, ok := l.tm.TryRecv()
		if !ok {
			return n, false
		}
		n++
		l.stats.timers.Add(1)
		f(l)
	}
	return n, true
}
