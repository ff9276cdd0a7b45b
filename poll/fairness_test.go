package poll

// Fairness between descriptors and Registrations when more is ready than
// the Events buffer holds (rule 11): no deadlock, no starvation, and a bound
// on how long any ready source waits.
//
// The bound, from poll_wait.go. When something is always ready, every Poll
// call is one pass of pollOnce, and the passes alternate which kind goes
// first (p.userFirst flips on every pass):
//
//   - user-first: the held list is reported into the buffer (a FIFO: nodes
//     newly linked through the readiness queue join at its back, and every
//     node looked at goes to the back), then the selector fills whatever
//     room is left;
//   - descriptor-first: the selector is asked for as many events as the
//     buffer holds, then the held list fills whatever room is left.
//
// So in any two consecutive calls each kind is offered at least
// min(cap, N) slots, where N is the number of ready sources of that kind,
// and each kind rotates: the held list is a FIFO in which idle nodes take
// no slot, and the kernel's ready list rotates the same way
// (epoll re-appends a reported level-triggered descriptor at the tail of
// its ready list; the poll(2) backend must rotate too, or it starves
// descriptors). Hence every ready source is reported at least once in every
// window of
//
//	W(N, cap) = 2 * ceil(N / cap)
//
// consecutive Poll calls, whatever the number of ready sources of the other
// kind. With cap = 1 and one source of a kind, that is every second call:
// a busy level Registration cannot hide a socket, and a flood of socket
// events cannot hide a Registration.

import (
	"fmt"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/unipoll/unipoll/internal/testsupport"
)

const (
	fairUserBase = Token(1000) // tokens of the Registrations
	fairFdBase   = Token(2000) // tokens of the socket pairs
)

// fairWindow is W(n, capacity) above.
func fairWindow(n, capacity int) int { return 2 * ((n + capacity - 1) / capacity) }

// addReadyRegistrations registers n always-ready level Registrations with
// tokens fairUserBase+i.
func addReadyRegistrations(t *testing.T, p *Poll, n int) {
	for i := range n {
		_, s := newRegistered(t, p, fairUserBase+Token(i), Readable, Level)
		require.NoError(t, s.SetReadiness(Readable))
	}
}

// readySockets makes n socket pairs with one byte written (never read), so
// that their first ends are readable for good. Make them before the Poll,
// so that the Poll is closed before them at cleanup.
func readySockets(t *testing.T, n int) []int {
	ends := make([]int, n)
	for i := range n {
		a, b := socketPair(t)
		writeFd(t, b, []byte{1})
		ends[i] = a
	}
	return ends
}

// registerSockets registers the readable ends level-triggered with tokens
// fairFdBase+i.
func registerSockets(t *testing.T, p *Poll, ends []int) {
	for i, fd := range ends {
		require.NoError(t, p.Register(Fd(fd), fairFdBase+Token(i), Readable, Level))
	}
}

// TestFairnessMixed: nu always-ready level Registrations and nf
// level-readable sockets, polled with buffers of capacity 1 to 4. Every
// call is full (no deadlock, nothing lost to a buffer that is too small),
// and every source appears in every window of W(N, cap) consecutive calls.
func TestFairnessMixed(t *testing.T) {
	cases := []struct{ nu, nf int }{{10, 10}, {1, 1}, {50, 1}, {1, 50}, {10, 0}, {0, 10}}
	forEachBackend(t, func(t *testing.T, newPoll newPollFunc) {
		for _, c := range cases {
			for capacity := 1; capacity <= 4; capacity++ {
				t.Run(fmt.Sprintf("user%d_fd%d_cap%d", c.nu, c.nf, capacity), func(t *testing.T) {
					socks := readySockets(t, c.nf)
					p := newPoll(t)
					addReadyRegistrations(t, p, c.nu)
					registerSockets(t, p, socks)

					wantN := min(capacity, c.nu+c.nf)
					wu, wf := fairWindow(c.nu, capacity), fairWindow(c.nf, capacity)
					calls := 4 * max(wu, wf, 4)
					ev := NewEvents(capacity)
					seen := make([]map[Token]bool, calls)
					for i := range calls {
						evs := pollEvents(t, p, ev, eventWait)
						require.Len(t, evs, wantN, "call %d: a full buffer's worth is ready", i)
						seen[i] = map[Token]bool{}
						for _, e := range evs {
							require.Equal(t, Readable, e.Ready, "event %v", e)
							isUser := e.Token >= fairUserBase && e.Token < fairUserBase+Token(c.nu)
							isFd := e.Token >= fairFdBase && e.Token < fairFdBase+Token(c.nf)
							require.True(t, isUser || isFd, "unknown token %d", e.Token)
							seen[i][e.Token] = true
						}
					}
					checkWindows := func(kind string, base Token, n, w int) {
						for start := 0; start+w <= calls; start++ {
							for k := range n {
								tok := base + Token(k)
								found := false
								for i := start; i < start+w && !found; i++ {
									found = seen[i][tok]
								}
								require.True(t, found, "%s %d not reported in calls %d..%d (window %d = 2*ceil(%d/%d)); calls: %v",
									kind, tok, start, start+w-1, w, n, capacity, seen)
							}
						}
					}
					checkWindows("Registration", fairUserBase, c.nu, wu)
					checkWindows("socket", fairFdBase, c.nf, wf)
				})
			}
		}
	})
}

// TestFairnessUserFloodCannotHideSocket: a goroutine keeps setting 64 edge
// Registrations as fast as it can while a socket becomes readable; with a
// buffer of one, the socket is reported within four Poll calls of its
// becoming readable, every time.
//
// Four, not W(1, 1) = 2: here the producer may find the Poll about to sleep
// (when it momentarily drained the queue) and write the waker, and the
// waker's kernel event takes a selector slot like a descriptor's: a
// descriptor-first call with room for one may get only the wake-up, and the
// socket then waits for the next descriptor-first call. Wake-ups are
// coalesced (at most one waker event is pending at a time), so this costs
// at most one extra pair of calls.
func TestFairnessUserFloodCannotHideSocket(t *testing.T) {
	forEachBackend(t, func(t *testing.T, newPoll newPollFunc) {
		a, b := socketPair(t)
		p := newPoll(t)
		sets := make([]*SetReadiness, 64)
		for i := range sets {
			_, sets[i] = newRegistered(t, p, fairUserBase+Token(i), Readable, Edge)
		}
		require.NoError(t, p.Register(Fd(a), fairFdBase, Readable, Level))
		stop := make(chan struct{})
		var wg sync.WaitGroup
		var sets0 atomic.Int64
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				for _, s := range sets {
					select {
					case <-stop:
						return
					default:
					}
					if err := s.SetReadiness(Readable); err != nil {
						t.Errorf("SetReadiness: %v", err)
						return
					}
					sets0.Add(1)
				}
			}
		}()
		defer wg.Wait()
		defer close(stop)
		ev := NewEvents(1)
		testsupport.WaitFor(t, "the flood to start", func() bool { return sets0.Load() >= 64 })
		slow := 0
		for round := range 50 {
			writeFd(t, b, []byte{1})
			found, calls := false, 0
			for ; calls < 4 && !found; calls++ {
				_, found = findToken(pollEvents(t, p, ev, eventWait), fairFdBase)
			}
			require.True(t, found, "round %d: readable socket not reported within 4 calls during a flood of Registrations", round)
			if calls > 2 {
				slow++
			}
			require.Equal(t, 1, drain(t, a))
		}
		t.Logf("socket reported after more than 2 calls (a wake-up in the way) in %d of 50 rounds; waker writes %d",
			slow, p.Stats().WakerWrites)
	})
}

// TestFairnessSocketFloodCannotHideRegistration: 50 always-readable level
// sockets fill every buffer; a Registration made ready (edge, then level)
// is reported within two Poll calls of SetReadiness returning, every time.
func TestFairnessSocketFloodCannotHideRegistration(t *testing.T) {
	forEachBackend(t, func(t *testing.T, newPoll newPollFunc) {
		for _, m := range modes {
			t.Run(m.name, func(t *testing.T) {
				for capacity := 1; capacity <= 4; capacity++ {
					socks := readySockets(t, 50)
					p := newPoll(t)
					registerSockets(t, p, socks)
					r, s := newRegistered(t, p, fairUserBase, Readable, m.opts)
					ev := NewEvents(capacity)
					// Let the sockets' events get going first.
					for range 3 {
						require.Len(t, pollEvents(t, p, ev, eventWait), capacity)
					}
					for round := range 50 {
						require.NoError(t, s.SetReadiness(Readable))
						found := false
						for call := 0; call < 2 && !found; call++ {
							evs := pollEvents(t, p, ev, eventWait)
							require.Len(t, evs, capacity)
							_, found = findToken(evs, fairUserBase)
						}
						require.True(t, found, "cap %d, round %d: Registration not reported within 2 calls among 50 ready sockets", capacity, round)
						require.NoError(t, s.UnsetReadiness(Readable))
						if m.opts.IsOneshot() {
							require.NoError(t, p.Reregister(r, fairUserBase, Readable, m.opts))
						}
					}
					require.NoError(t, p.Close())
				}
			})
		}
	})
}
