package poll

// Poll calls on descriptors: concurrent callers, fairness (rule 11),
// timeouts, Stats, stale kernel events.

import (
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"
)

// Concurrent Poll callers are serialised: two goroutines polling one Poll
// with small buffers, while level-triggered descriptors stay ready all the
// time, between them see every edge and oneshot event of a round exactly
// once (edge sources are drained, and told so, after each round), and nothing is
// reported twice in one call. Unserialised callers would share the Poll's
// kernel buffer and bookkeeping, which the race detector and the counts
// catch.
func TestFdConcurrentPollers(t *testing.T) {
	forEachBackend(t, func(t *testing.T, newPoll newPollFunc) {
		const (
			nEdge, nOneshot, nLevel = 6, 6, 4
			rounds                  = 30
		)
		type src struct {
			tok      Token
			r, w     int
			opts     PollOpt
			counting bool
		}
		var srcs []*src
		for i := range nEdge + nOneshot + nLevel {
			r, w := socketPair(t)
			s := &src{tok: Token(100 + i), r: r, w: w}
			switch {
			case i < nEdge:
				s.opts, s.counting = Edge, true
			case i < nEdge+nOneshot:
				s.opts, s.counting = Oneshot, true
			default:
				s.opts = Level
				writeFd(t, w, []byte("x")) // ready for good
			}
			srcs = append(srcs, s)
		}
		p := newPoll(t)
		byTok := map[Token]*src{}
		for _, s := range srcs {
			byTok[s.tok] = s
			require.NoError(t, p.Register(Fd(s.r), s.tok, Readable, s.opts))
		}
		for round := range rounds {
			var mu sync.Mutex
			counts := map[Token]int{}
			var missing atomic.Int64
			missing.Store(nEdge + nOneshot)
			record := func(evs []Event) {
				mu.Lock()
				defer mu.Unlock()
				for _, e := range evs {
					s := byTok[e.Token]
					if !assert.NotNil(t, s, "unknown token %d", e.Token) || !s.counting {
						continue
					}
					assert.Equal(t, Readable, e.Ready)
					counts[e.Token]++
					if counts[e.Token] == 1 {
						missing.Add(-1)
					}
				}
			}
			for _, s := range srcs {
				if s.counting {
					writeFd(t, s.w, []byte("x"))
				}
			}
			var wg sync.WaitGroup
			deadline := time.Now().Add(eventWait)
			for range 2 {
				wg.Add(1)
				go func() {
					defer wg.Done()
					ev := NewEvents(3)
					for missing.Load() > 0 && time.Now().Before(deadline) {
						_, err := p.Poll(ev, 5*time.Millisecond)
						if !assert.NoError(t, err) {
							return
						}
						var evs []Event
						for e := range ev.All() {
							evs = append(evs, e)
						}
						seen := map[Token]bool{}
						for _, e := range evs {
							assert.False(t, seen[e.Token], "token %d twice in one call: %v", e.Token, evs)
							seen[e.Token] = true
						}
						record(evs)
					}
				}()
			}
			wg.Wait()
			// Anything still pending (a duplicate) shows up now: one big
			// buffer takes everything that is ready.
			big := NewEvents(64)
			for range 3 {
				record(pollEvents(t, p, big, noEventWait/4))
			}
			require.Zero(t, missing.Load(), "round %d: events lost; counts %v", round, counts)
			for _, s := range srcs {
				if !s.counting {
					continue
				}
				require.Equal(t, 1, counts[s.tok], "round %d: token %d (%v) counts %v", round, s.tok, s.opts, counts)
				drain(t, s.r)
				require.NoError(t, Fd(s.r).Drained(p, Readable))
				if s.opts.IsOneshot() {
					require.NoError(t, p.Reregister(Fd(s.r), s.tok, Readable, s.opts))
				}
			}
		}
	})
}

// Fairness (rule 11): with more level-ready descriptors than the buffer
// holds, every one is reported within a bounded number of calls, and none
// twice in one call; a descriptor that becomes ready meanwhile is not hidden
// behind them either.
func TestFdFairnessSmallBuffer(t *testing.T) {
	const n = 10
	forEachBackend(t, func(t *testing.T, newPoll newPollFunc) {
		for capacity := 1; capacity <= 4; capacity++ {
			t.Run(fmt.Sprintf("cap%d", capacity), func(t *testing.T) {
				fds := make([]int, n)
				for i := range fds {
					fds[i] = eventFd(t)
					eventFdAdd(t, fds[i], 1)
				}
				late, lateW := socketPair(t)
				p := newPoll(t)
				for i, fd := range fds {
					require.NoError(t, p.Register(Fd(fd), Token(i), Readable, Level))
				}
				require.NoError(t, p.Register(Fd(late), 99, Readable, Edge))
				ev := NewEvents(capacity)
				rounds := (n + capacity - 1) / capacity
				bound := 2*rounds + 2
				for pass := range 3 {
					seen := map[Token]int{}
					for call := 0; call < bound && len(seen) < n; call++ {
						evs := pollEvents(t, p, ev, 0)
						require.NotEmpty(t, evs)
						for _, e := range evs {
							require.Less(t, int(e.Token), n, "unexpected %v", e)
							seen[e.Token]++
						}
					}
					require.Len(t, seen, n, "pass %d: not every ready descriptor reported within %d calls of %d: %v", pass, bound, capacity, seen)
				}
				writeFd(t, lateW, []byte("x"))
				waitKernelReady(t, late, unix.POLLIN)
				found := false
				for call := 0; call < bound+1 && !found; call++ {
					_, found = findToken(pollEvents(t, p, ev, 0), 99)
				}
				require.True(t, found, "edge event hidden behind %d level-ready descriptors for %d calls", n, bound+1)
			})
		}
	})
}

// A sub-millisecond timeout is honoured: an idle Poll never returns early,
// and 50 such calls add up to at least 50 times the timeout, without
// entering the selector over and over (a busy loop). Upper bounds are
// generous; only gross oversleeping fails.
func TestFdSubMillisecondTimeout(t *testing.T) {
	const (
		timeout = 300 * time.Microsecond
		calls   = 50
	)
	forEachBackend(t, func(t *testing.T, newPoll newPollFunc) {
		a, _ := socketPair(t)
		p := newPoll(t)
		require.NoError(t, p.Register(Fd(a), 1, Readable, Level))
		ev := NewEvents(4)
		before := p.Stats()
		var total time.Duration
		for i := range calls {
			start := time.Now()
			n, err := p.Poll(ev, timeout)
			el := time.Since(start)
			require.NoError(t, err)
			require.Zero(t, n)
			require.GreaterOrEqual(t, el, timeout, "call %d returned early", i)
			require.Less(t, el, time.Second, "call %d", i)
			total += el
		}
		after := p.Stats()
		require.GreaterOrEqual(t, total, calls*timeout)
		require.Less(t, total, 10*time.Second)
		selects := after.Selects - before.Selects
		require.LessOrEqual(t, selects, uint64(calls*4), "%d selects for %d calls: busy loop", selects, calls)
		t.Logf("%d calls of %v: %v in all, %d selects", calls, timeout, total, selects)
	})
}

// Stats: OSEvents counts descriptor events delivered, Polls counts calls.
func TestFdStatsOSEvents(t *testing.T) {
	forEachBackend(t, func(t *testing.T, newPoll newPollFunc) {
		a, b := socketPair(t)
		c, _ := socketPair(t)
		p := newPoll(t)
		require.NoError(t, p.Register(Fd(a), 1, Readable, Level))
		require.NoError(t, p.Register(Fd(c), 2, Writable, Level))
		writeFd(t, b, []byte("x"))
		waitKernelReady(t, a, unix.POLLIN)
		ev := NewEvents(4)
		before := p.Stats()
		for range 3 {
			evs := pollEvents(t, p, ev, 0)
			require.Len(t, evs, 2)
		}
		require.NoError(t, p.Deregister(Fd(c)))
		drain(t, a)
		requireNoEvents(t, p, ev)
		after := p.Stats()
		require.Equal(t, uint64(6), after.OSEvents-before.OSEvents)
		require.Equal(t, uint64(4), after.Polls-before.Polls)
		require.Zero(t, after.UserEvents-before.UserEvents)
		require.Zero(t, after.Stale-before.Stale)
	})
}

// Stats.Stale, and rule 7 across descriptor reuse, on epoll: an epoll
// registration lives as long as the open file, not the descriptor number.
// With a dup keeping the file open, closing and deregistering the original
// number leaves the kernel registration behind; its events carry the old
// generation, so Poll drops them (counted as Stale) instead of reporting
// them, also after the number has been reused for a new registration.
func TestFdStaleKernelEventDropped(t *testing.T) {
	p := newPollBackend(t, "epoll")
	a, b := socketPair(t)
	dup, err := unix.FcntlInt(uintptr(a), unix.F_DUPFD_CLOEXEC, 0)
	require.NoError(t, err)
	own(t, dup)
	ev := NewEvents(8)
	require.NoError(t, p.Register(Fd(a), 1, Readable, Edge))
	closeFd(t, a)
	require.NoError(t, p.Deregister(Fd(a)))

	// Reuse the number for a new registration (it is the lowest free one).
	c, d := socketPair(t)
	if c != a {
		t.Skipf("descriptor %d was not reused (got %d, %d)", a, c, d)
	}
	require.NoError(t, p.Register(Fd(c), 2, Readable, Edge))

	before := p.Stats().Stale
	writeFd(t, b, []byte("x")) // the old file (still open as dup) becomes readable
	requireNoEvents(t, p, ev)
	require.Equal(t, uint64(1), p.Stats().Stale-before, "the old registration's event was not counted stale")

	writeFd(t, d, []byte("x"))
	require.Equal(t, []Event{{Token: 2, Ready: Readable}}, pollUntil(t, p, ev, func(evs []Event) bool { return len(evs) > 0 }, eventWait))
}

// A descriptor whose readiness is entirely outside the interest (the read
// end of a pipe whose writer is gone, registered for Writable: the kernel
// reports POLLHUP whatever was asked) must not make an idle Poll spin:
// the filtered event is not reported, and a Poll waiting for 50ms must
// actually wait, not re-enter the selector again and again.
func TestFdFilteredReadinessDoesNotSpin(t *testing.T) {
	forEachBackend(t, func(t *testing.T, newPoll newPollFunc) {
		forModes(t, nil, func(t *testing.T, opts PollOpt) {
			r, w := pipe(t)
			closeFd(t, w)
			p := newPoll(t)
			require.NoError(t, p.Register(Fd(r), 1, Writable, opts))
			ev := NewEvents(4)
			before := p.Stats().Selects
			start := time.Now()
			n, err := p.Poll(ev, 50*time.Millisecond)
			el := time.Since(start)
			require.NoError(t, err)
			require.Zero(t, n)
			require.GreaterOrEqual(t, el, 50*time.Millisecond)
			selects := p.Stats().Selects - before
			assert.LessOrEqual(t, selects, uint64(10), "%d selects in one idle 50ms Poll: it spins on an event it filters out", selects)
		})
	})
}
