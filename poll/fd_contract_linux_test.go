package poll

// The contract (ARCHITECTURE.md, rules 1-11) for descriptors, on every backend, in
// every trigger mode, for readable, writable, hang-up and error readiness.
//
// Most tests are table-driven over readyKinds (a way to make a descriptor
// ready for one kind of readiness, and not ready again) and modes.

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

// kindFd is a descriptor opened by a readyKind, not yet ready.
type kindFd struct {
	fd int
	// trigger makes fd ready for the kind's interest. Safe from any
	// goroutine. For a sticky kind it may be called once.
	trigger func() error
	// clear makes fd not ready again (drains it, fills it); after it,
	// trigger makes it ready again. nil for sticky kinds (hang-up, error),
	// whose readiness cannot be undone.
	clear func() error
}

func (k kindFd) fire(t testing.TB) {
	t.Helper()
	require.NoError(t, k.trigger(), "trigger")
}

func (k kindFd) unfire(t testing.TB) {
	t.Helper()
	require.NotNil(t, k.clear)
	require.NoError(t, k.clear(), "clear")
}

// readyKind is one kind of readiness on one kind of descriptor.
type readyKind struct {
	name     string
	interest Ready // what the test registers
	want     Ready // the exact readiness of the event once triggered
	raw      int16 // poll(2) events showing the kernel has it (waitKernelReady)
	open     func(t *testing.T) kindFd
}

var readyKinds = []readyKind{
	{
		name: "readable/socketpair", interest: Readable, want: Readable, raw: unix.POLLIN,
		open: func(t *testing.T) kindFd {
			a, b := socketPair(t)
			return kindFd{
				fd:      a,
				trigger: func() error { return tryWrite(b, []byte("x")) },
				clear:   func() error { _, err := tryDrain(a); return err },
			}
		},
	},
	{
		name: "readable/pipe", interest: Readable, want: Readable, raw: unix.POLLIN,
		open: func(t *testing.T) kindFd {
			r, w := pipe(t)
			return kindFd{
				fd:      r,
				trigger: func() error { return tryWrite(w, []byte("x")) },
				clear:   func() error { _, err := tryDrain(r); return err },
			}
		},
	},
	{
		name: "readable/eventfd", interest: Readable, want: Readable, raw: unix.POLLIN,
		open: func(t *testing.T) kindFd {
			e := eventFd(t)
			return kindFd{
				fd:      e,
				trigger: func() error { return tryWrite(e, []byte{1, 0, 0, 0, 0, 0, 0, 0}) },
				clear:   func() error { _, err := tryDrain(e); return err },
			}
		},
	},
	{
		name: "readable/tcp", interest: Readable, want: Readable, raw: unix.POLLIN,
		open: func(t *testing.T) kindFd {
			c, s := tcpPair(t)
			return kindFd{
				fd:      c,
				trigger: func() error { return tryWrite(s, []byte("x")) },
				clear:   func() error { _, err := tryDrain(c); return err },
			}
		},
	},
	{
		name: "writable/socketpair", interest: Writable, want: Writable, raw: unix.POLLOUT,
		open: func(t *testing.T) kindFd {
			a, b := socketPair(t)
			fill(t, a)
			return kindFd{
				fd:      a,
				trigger: func() error { _, err := tryDrain(b); return err },
				clear:   func() error { _, err := tryFill(a); return err },
			}
		},
	},
	{
		name: "writable/pipe", interest: Writable, want: Writable, raw: unix.POLLOUT,
		open: func(t *testing.T) kindFd {
			r, w := pipe(t)
			fill(t, w)
			return kindFd{
				fd:      w,
				trigger: func() error { _, err := tryDrain(r); return err },
				clear:   func() error { _, err := tryFill(w); return err },
			}
		},
	},
	{
		name: "hangup/socketpair", interest: Readable | Hup, want: Readable | Hup, raw: unix.POLLIN | unix.POLLRDHUP,
		open: func(t *testing.T) kindFd {
			a, b := socketPair(t)
			return kindFd{fd: a, trigger: func() error { return tryCloseFd(t, b) }}
		},
	},
	{
		name: "hangup/pipe", interest: Readable | Hup, want: Readable | Hup, raw: unix.POLLIN | unix.POLLRDHUP,
		open: func(t *testing.T) kindFd {
			r, w := pipe(t)
			return kindFd{fd: r, trigger: func() error { return tryCloseFd(t, w) }}
		},
	},
	{
		name: "hangup/tcp", interest: Readable | Hup, want: Readable | Hup, raw: unix.POLLIN | unix.POLLRDHUP,
		open: func(t *testing.T) kindFd {
			c, s := tcpPair(t)
			return kindFd{fd: c, trigger: func() error { return tryCloseFd(t, s) }}
		},
	},
	{
		// The peer resets the connection: the socket has a pending error
		// (ECONNRESET). Only Error is asked for, so the Readable, Writable
		// and Hup the reset also causes must not show.
		name: "error/tcp-reset", interest: Error, want: Error, raw: 0,
		open: func(t *testing.T) kindFd {
			c, s := tcpPair(t)
			resetOnClose(t, s)
			return kindFd{fd: c, trigger: func() error { return tryCloseFd(t, s) }}
		},
	},
	{
		// The same, with every kind asked for: an error makes the socket
		// readable and writable too (maskReady).
		name: "error/tcp-reset-all", interest: Readable | Writable | Error | Hup, want: Readable | Writable | Error | Hup, raw: 0,
		open: func(t *testing.T) kindFd {
			c, s := tcpPair(t)
			resetOnClose(t, s)
			fill(t, c) // not writable before the reset
			return kindFd{fd: c, trigger: func() error { return tryCloseFd(t, s) }}
		},
	},
}

// forEachKind runs fn as a parallel subtest per readyKind, in one mode, on one
// backend.
func forEachKind(t *testing.T, newPoll newPollFunc, fn func(t *testing.T, p *Poll, k readyKind, kf kindFd)) {
	for _, k := range readyKinds {
		t.Run(k.name, func(t *testing.T) {
			t.Parallel()
			kf := k.open(t)
			p := newPoll(t)
			fn(t, p, k, kf)
		})
	}
}

// ---------------------------------------------------------------------------
// Rule 1

// Rule 1: readable and writable readiness of one descriptor merge into one
// event, in every mode; and a descriptor is never reported twice in one call
// (pollEvents checks every call).
func TestFdRule1OneEventPerToken(t *testing.T) {
	forEachBackend(t, func(t *testing.T, newPoll newPollFunc) {
		forModes(t, nil, func(t *testing.T, opts PollOpt) {
			a, b := socketPair(t)
			p := newPoll(t)
			ev := NewEvents(16)
			writeFd(t, b, []byte("x"))
			waitKernelReady(t, a, unix.POLLIN)
			require.NoError(t, p.Register(Fd(a), 1, Readable|Writable, opts))
			evs := pollUntil(t, p, ev, func(evs []Event) bool { return len(evs) > 0 }, eventWait)
			require.Equal(t, []Event{{Token: 1, Ready: Readable | Writable}}, evs)
			if opts.IsLevel() && !opts.IsOneshot() {
				for range 3 {
					evs = pollEvents(t, p, ev, 0)
					require.Equal(t, []Event{{Token: 1, Ready: Readable | Writable}}, evs)
				}
			}
		})
	})
}

// ---------------------------------------------------------------------------
// Rules 2, 3, 4: the trigger modes

// Rule 2: edge. One notification when the descriptor becomes ready, none
// after that while nothing new arrives, none once it is drained (or
// filled) and re-armed as the rule under Edge says, and a new one when it
// becomes ready again. The same on every backend: poll(2) emulates edge
// exactly.
func TestFdRule2Edge(t *testing.T) {
	forEachBackend(t, func(t *testing.T, newPoll newPollFunc) {
		forEachKind(t, newPoll, func(t *testing.T, p *Poll, k readyKind, kf kindFd) {
			ev := NewEvents(8)
			require.NoError(t, p.Register(Fd(kf.fd), 7, k.interest, Edge))
			requireNoEvents(t, p, ev)

			kf.fire(t)
			requireEvent(t, p, ev, 7, k.want)
			requireNoEvents(t, p, ev)
			if kf.clear == nil {
				return
			}
			kf.unfire(t)
			require.NoError(t, Fd(kf.fd).Rearm(p, k.interest))
			requireNoEvents(t, p, ev)

			kf.fire(t)
			requireEvent(t, p, ev, 7, k.want)
			requireNoEvents(t, p, ev)
		})
	})
}

// Rule 2 for new data arriving on a descriptor that is still readable: where
// the kernel triggers edges, each arrival is a new edge, so it is not lost
// behind the first one. Where edge is emulated, a caller that has not yet
// read to EAGAIN is still in its read pass and hears nothing new until it
// re-arms; then what is there is reported at once. Either way nothing is
// lost for a caller who follows the rule.
func TestFdRule2EdgeNewDataWhileReadable(t *testing.T) {
	forEachBackend(t, func(t *testing.T, newPoll newPollFunc) {
		a, b := socketPair(t)
		p := newPoll(t)
		ev := NewEvents(8)
		require.NoError(t, p.Register(Fd(a), 1, Readable, Edge))
		for i := range 5 {
			writeFd(t, b, []byte("x"))
			if i == 0 || !p.EdgeEmulated() {
				requireEvent(t, p, ev, 1, Readable)
			}
			requireNoEvents(t, p, ev)
		}
		require.NoError(t, Fd(a).Rearm(p, Readable))
		if p.EdgeEmulated() {
			requireEvent(t, p, ev, 1, Readable) // still unread
		}
		require.Equal(t, 5, drain(t, a))
		require.NoError(t, Fd(a).Rearm(p, Readable))
		requireNoEvents(t, p, ev)
	})
}

// Rule 3: level. An event on every Poll while ready, none once not ready.
func TestFdRule3Level(t *testing.T) {
	forEachBackend(t, func(t *testing.T, newPoll newPollFunc) {
		forEachKind(t, newPoll, func(t *testing.T, p *Poll, k readyKind, kf kindFd) {
			ev := NewEvents(8)
			require.NoError(t, p.Register(Fd(kf.fd), 7, k.interest, Level))
			requireNoEvents(t, p, ev)

			kf.fire(t)
			requireEvent(t, p, ev, 7, k.want)
			for range 5 {
				requireNext(t, p, ev, 7, k.want)
			}
			if kf.clear == nil {
				return
			}
			kf.unfire(t)
			requireNoEvents(t, p, ev)
			kf.fire(t)
			requireEvent(t, p, ev, 7, k.want)
			requireNext(t, p, ev, 7, k.want)
		})
	})
}

// Rule 4: oneshot (level or edge). One event, then nothing, even when new
// readiness arrives, until Reregister re-arms it; then it fires at once if
// still ready (rule 5), and once more only.
func TestFdRule4Oneshot(t *testing.T) {
	forEachBackend(t, func(t *testing.T, newPoll newPollFunc) {
		forModes(t, []string{"Oneshot", "EdgeOneshot"}, func(t *testing.T, opts PollOpt) {
			forEachKind(t, newPoll, func(t *testing.T, p *Poll, k readyKind, kf kindFd) {
				ev := NewEvents(8)
				require.NoError(t, p.Register(Fd(kf.fd), 7, k.interest, opts))
				requireNoEvents(t, p, ev)

				kf.fire(t)
				requireEvent(t, p, ev, 7, k.want)
				requireNoEvents(t, p, ev)
				if kf.clear != nil {
					// New readiness while disarmed: still nothing.
					kf.unfire(t)
					kf.fire(t)
					waitKernelReady(t, kf.fd, k.raw)
					requireNoEvents(t, p, ev)
				}

				// Re-arm: still ready, so it fires at once, then once only.
				require.NoError(t, p.Reregister(Fd(kf.fd), 7, k.interest, opts))
				requireNext(t, p, ev, 7, k.want)
				requireNoEvents(t, p, ev)

				if kf.clear == nil {
					return
				}
				// Re-arm while not ready: nothing until it becomes ready.
				kf.unfire(t)
				require.NoError(t, p.Reregister(Fd(kf.fd), 7, k.interest, opts))
				requireNoEvents(t, p, ev)
				kf.fire(t)
				requireEvent(t, p, ev, 7, k.want)
				requireNoEvents(t, p, ev)
			})
		})
	})
}

// ---------------------------------------------------------------------------
// Rule 5

// Rule 5: Register while already ready is reported by the very next Poll,
// in every mode; so is Reregister of a ready descriptor that has already
// been reported (edge, oneshot) or that is reported anyway (level).
func TestFdRule5RegisterWhileReady(t *testing.T) {
	forEachBackend(t, func(t *testing.T, newPoll newPollFunc) {
		forModes(t, nil, func(t *testing.T, opts PollOpt) {
			forEachKind(t, newPoll, func(t *testing.T, p *Poll, k readyKind, kf kindFd) {
				ev := NewEvents(8)
				kf.fire(t)
				waitKernelReady(t, kf.fd, k.raw)
				require.NoError(t, p.Register(Fd(kf.fd), 3, k.interest, opts))
				requireNext(t, p, ev, 3, k.want)
				if opts.IsOneshot() || opts.IsEdge() {
					requireNoEvents(t, p, ev)
				}
				require.NoError(t, p.Reregister(Fd(kf.fd), 4, k.interest, opts))
				requireNext(t, p, ev, 4, k.want)
			})
		})
	})
}

// ---------------------------------------------------------------------------
// Rule 6

// Rule 6: a registration never reports a readiness kind outside its
// interest: Writable-only never says Readable, Readable-only never says
// Writable, even while the descriptor is both.
func TestFdRule6InterestFilters(t *testing.T) {
	forEachBackend(t, func(t *testing.T, newPoll newPollFunc) {
		forModes(t, nil, func(t *testing.T, opts PollOpt) {
			// a and c are both readable and writable; r, the read end of a
			// pipe, is readable and never writable.
			a, b := socketPair(t)
			c, d := socketPair(t)
			r, w := pipe(t)
			p := newPoll(t)
			ev := NewEvents(8)
			require.NoError(t, p.Register(Fd(a), 1, Writable, opts))
			require.NoError(t, p.Register(Fd(r), 2, Writable, opts))
			require.NoError(t, p.Register(Fd(c), 3, Readable, opts))
			writeFd(t, b, []byte("x"))
			writeFd(t, w, []byte("x"))
			writeFd(t, d, []byte("x"))
			waitKernelReady(t, a, unix.POLLIN)
			waitKernelReady(t, r, unix.POLLIN)
			waitKernelReady(t, c, unix.POLLIN)

			want := map[Token]Ready{1: Writable, 3: Readable}
			got := map[Token]bool{}
			check := func(evs []Event) {
				for _, e := range evs {
					require.Equal(t, want[e.Token], e.Ready, "token %d: %v", e.Token, evs)
					got[e.Token] = true
				}
			}
			pollUntil(t, p, ev, func(evs []Event) bool { check(evs); return len(got) == 2 }, eventWait)
			for range 3 {
				check(pollEvents(t, p, ev, noEventWait))
			}
		})
	})
}

// Rule 6: removing an interest by Reregister discards a pending
// notification for it, even one the kernel has already queued.
func TestFdRule6ReregisterDropsPendingInterest(t *testing.T) {
	forEachBackend(t, func(t *testing.T, newPoll newPollFunc) {
		forModes(t, nil, func(t *testing.T, opts PollOpt) {
			t.Run("pipe", func(t *testing.T) {
				// The read end of a pipe is never writable: once Readable
				// is removed there is nothing left to report.
				r, w := pipe(t)
				p := newPoll(t)
				ev := NewEvents(8)
				require.NoError(t, p.Register(Fd(r), 1, Readable, opts))
				writeFd(t, w, []byte("x"))
				waitKernelReady(t, r, unix.POLLIN)
				require.NoError(t, p.Reregister(Fd(r), 1, Writable, opts))
				requireNoEvents(t, p, ev)
				requireNoEvents(t, p, ev)
				// And adding it back reports it again (rule 5).
				require.NoError(t, p.Reregister(Fd(r), 1, Readable, opts))
				requireNext(t, p, ev, 1, Readable)
			})
			t.Run("socketpair", func(t *testing.T) {
				// Readable|Writable with data pending, then Writable only:
				// the pending Readable must not leak into later events.
				a, b := socketPair(t)
				p := newPoll(t)
				ev := NewEvents(8)
				require.NoError(t, p.Register(Fd(a), 1, Readable|Writable, opts))
				writeFd(t, b, []byte("x"))
				waitKernelReady(t, a, unix.POLLIN)
				require.NoError(t, p.Reregister(Fd(a), 1, Writable, opts))
				requireNext(t, p, ev, 1, Writable)
				for range 3 {
					for _, e := range pollEvents(t, p, ev, noEventWait) {
						require.Equal(t, Event{Token: 1, Ready: Writable}, e)
					}
				}
			})
		})
	})
}

// Rule 6 and maskReady: a hang-up makes a descriptor readable, an error
// makes it readable and writable, and Error and Hup themselves are reported
// only when asked for. Every interest set is checked in every mode against
// kernel states that are the same on every backend.
func TestFdRule6ErrorHupMapping(t *testing.T) {
	type state struct {
		name string
		// open returns a descriptor already in the state.
		open func(t *testing.T) int
		// cases maps interest to the exact readiness reported (0: nothing).
		cases map[Ready]Ready
	}
	states := []state{
		{
			// Read end of a pipe whose writer is gone: POLLHUP only, and
			// never writable.
			name: "pipe-hup",
			open: func(t *testing.T) int {
				r, w := pipe(t)
				closeFd(t, w)
				waitKernelReady(t, r, unix.POLLIN)
				return r
			},
			cases: map[Ready]Ready{
				Readable:                          Readable,
				Readable | Hup:                    Readable | Hup,
				Hup:                               Hup,
				Readable | Error:                  Readable,
				Readable | Writable | Error | Hup: Readable | Hup,
				Writable:                          0,
				Error:                             0,
				Writable | Error:                  0,
				Readable | Writable | Error | Hup | Priority: Readable | Hup,
			},
		},
		{
			// Socket whose peer reset the connection: error, hang-up and
			// end of file; not writable in itself (sending is shut down).
			name: "tcp-reset",
			open: func(t *testing.T) int {
				c, s := tcpPair(t)
				resetOnClose(t, s)
				closeFd(t, s)
				waitKernelReady(t, c, unix.POLLIN)
				return c
			},
			cases: map[Ready]Ready{
				Error:                             Error,
				Readable:                          Readable,
				Writable:                          Writable,
				Hup:                               Hup,
				Writable | Error:                  Writable | Error,
				Readable | Hup:                    Readable | Hup,
				Readable | Writable:               Readable | Writable,
				Readable | Writable | Error | Hup: Readable | Writable | Error | Hup,
			},
		},
	}
	forEachBackend(t, func(t *testing.T, newPoll newPollFunc) {
		for _, st := range states {
			t.Run(st.name, func(t *testing.T) {
				forModes(t, nil, func(t *testing.T, opts PollOpt) {
					fd := st.open(t)
					for interest, want := range st.cases {
						t.Run(interest.String(), func(t *testing.T) {
							p := newPoll(t)
							ev := NewEvents(8)
							require.NoError(t, p.Register(Fd(fd), 1, interest, opts))
							if want == 0 {
								requireNoEvents(t, p, ev)
								return
							}
							requireNext(t, p, ev, 1, want)
						})
					}
				})
			})
		}
	})
}

// An unconnected socket whose non-blocking connect is refused reports Error
// (when asked) and Writable: the way a caller learns the connect failed.
func TestFdConnectRefused(t *testing.T) {
	cases := map[Ready]Ready{
		Writable:                          Writable,
		Writable | Error:                  Writable | Error,
		Error:                             Error,
		Readable | Writable | Error | Hup: Readable | Writable | Error | Hup,
	}
	forEachBackend(t, func(t *testing.T, newPoll newPollFunc) {
		forModes(t, nil, func(t *testing.T, opts PollOpt) {
			for interest, want := range cases {
				t.Run(interest.String(), func(t *testing.T) {
					fd := refusedConn(t)
					p := newPoll(t)
					ev := NewEvents(8)
					require.NoError(t, p.Register(Fd(fd), 1, interest, opts))
					requireEvent(t, p, ev, 1, want)
					soErr, err := unix.GetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_ERROR)
					require.NoError(t, err)
					require.Equal(t, unix.ECONNREFUSED, unix.Errno(soErr))
				})
			}
		})
	})
}

// ---------------------------------------------------------------------------
// Rule 7

// Rule 7: Deregister discards readiness the kernel already has, and later
// readiness is not reported either; registering again (under a new token)
// reports it at once (rule 5).
func TestFdRule7DeregisterDiscardsPending(t *testing.T) {
	forEachBackend(t, func(t *testing.T, newPoll newPollFunc) {
		forModes(t, nil, func(t *testing.T, opts PollOpt) {
			forEachKind(t, newPoll, func(t *testing.T, p *Poll, k readyKind, kf kindFd) {
				ev := NewEvents(8)
				require.NoError(t, p.Register(Fd(kf.fd), 1, k.interest, opts))
				kf.fire(t)
				waitKernelReady(t, kf.fd, k.raw)
				require.NoError(t, p.Deregister(Fd(kf.fd)))
				requireNoEvents(t, p, ev)
				if kf.clear != nil {
					kf.unfire(t)
					kf.fire(t)
					waitKernelReady(t, kf.fd, k.raw)
					requireNoEvents(t, p, ev)
				}
				require.NoError(t, p.Register(Fd(kf.fd), 2, k.interest, opts))
				requireNext(t, p, ev, 2, k.want)
			})
		})
	})
}

// Rule 7: Reregister changes the token. Events, including one for readiness
// the kernel had before Reregister, carry the new token; the old one is
// never reported again.
func TestFdRule7ReregisterChangesToken(t *testing.T) {
	forEachBackend(t, func(t *testing.T, newPoll newPollFunc) {
		forModes(t, nil, func(t *testing.T, opts PollOpt) {
			forEachKind(t, newPoll, func(t *testing.T, p *Poll, k readyKind, kf kindFd) {
				ev := NewEvents(8)
				require.NoError(t, p.Register(Fd(kf.fd), 1, k.interest, opts))
				kf.fire(t)
				waitKernelReady(t, kf.fd, k.raw)
				require.NoError(t, p.Reregister(Fd(kf.fd), 2, k.interest, opts))
				evs := pollEvents(t, p, ev, 0)
				require.Equal(t, []Event{{Token: 2, Ready: k.want}}, evs)
				for range 3 {
					for _, e := range pollEvents(t, p, ev, noEventWait) {
						require.Equal(t, Event{Token: 2, Ready: k.want}, e)
					}
				}
			})
		})
	})
}

// Rule 7 under concurrency: a Poll that starts after Deregister or
// Reregister has returned never reports the old token, although the
// descriptor stays ready throughout and another goroutine is polling all the
// time, so kernel events for the old registration are in flight whenever
// the change is made.
func TestFdRule7NoStaleTokenConcurrent(t *testing.T) {
	forEachBackend(t, func(t *testing.T, newPoll newPollFunc) {
		forModes(t, []string{"Edge", "Level"}, func(t *testing.T, opts PollOpt) {
			const iterations = 2000
			fds := make([]int, 4)
			for i := range fds {
				fds[i] = eventFd(t)
				eventFdAdd(t, fds[i], 1) // readable for good
			}
			p := newPoll(t)
			// Token of fds[i] at step s is s*len(fds)+i+1; floor[i] is the
			// lowest token of fds[i] a Poll starting now may report.
			floor := make([]atomic.Uint64, len(fds))
			for i, fd := range fds {
				floor[i].Store(uint64(i + 1))
				require.NoError(t, p.Register(Fd(fd), Token(i+1), Readable, opts))
			}
			var stop atomic.Bool
			var stale atomic.Int64
			var polls atomic.Int64
			done := make(chan error, 1)
			go func() {
				ev := NewEvents(len(fds))
				for !stop.Load() {
					var low [4]uint64
					for i := range floor {
						low[i] = floor[i].Load()
					}
					_, err := p.Poll(ev, time.Millisecond)
					if err != nil {
						done <- err
						return
					}
					polls.Add(1)
					for e := range ev.All() {
						i := (uint64(e.Token) - 1) % uint64(len(fds))
						if uint64(e.Token) < low[i] {
							if stale.Add(1) == 1 {
								t.Errorf("stale event %v: fds[%d] had moved on to token >= %d before this Poll started", e, i, low[i])
							}
						}
					}
				}
				done <- nil
			}()
			for s := 1; s <= iterations; s++ {
				i := s % len(fds)
				tok := Token(s*len(fds) + i + 1)
				if s%2 == 0 {
					require.NoError(t, p.Reregister(Fd(fds[i]), tok, Readable, opts))
				} else {
					require.NoError(t, p.Deregister(Fd(fds[i])))
					floor[i].Store(uint64(tok)) // nothing older may show from now on
					require.NoError(t, p.Register(Fd(fds[i]), tok, Readable, opts))
				}
				floor[i].Store(uint64(tok))
			}
			stop.Store(true)
			select {
			case err := <-done:
				require.NoError(t, err)
			case <-time.After(eventWait):
				t.Fatal("poller goroutine did not stop")
			}
			require.Zero(t, stale.Load(), "stale events")
			t.Logf("%d polls during %d changes", polls.Load(), iterations)
		})
	})
}

// ---------------------------------------------------------------------------
// Rule 8

// Rule 8: readiness produced by another goroutine wakes a Poll blocked with
// a negative timeout, in every mode, for every kind.
func TestFdRule8WakesBlockedPoll(t *testing.T) {
	forEachBackend(t, func(t *testing.T, newPoll newPollFunc) {
		forModes(t, nil, func(t *testing.T, opts PollOpt) {
			forEachKind(t, newPoll, func(t *testing.T, p *Poll, k readyKind, kf kindFd) {
				require.NoError(t, p.Register(Fd(kf.fd), 9, k.interest, opts))
				res := startPollForever(p)
				waitSelecting(t, p, 0)
				kf.fire(t)
				evs := res.wait(t, p)
				require.Equal(t, []Event{{Token: 9, Ready: k.want}}, evs)
			})
		})
	})
}

// Rule 8 with registration changes as the trigger: a Poll blocked forever
// wakes up for a ready descriptor registered, or a disarmed oneshot
// descriptor re-armed, by another goroutine; and (rule 7) a descriptor
// deregistered meanwhile is not reported by it.
func TestFdRule8RegisterWakesBlockedPoll(t *testing.T) {
	forEachBackend(t, func(t *testing.T, newPoll newPollFunc) {
		forModes(t, nil, func(t *testing.T, opts PollOpt) {
			t.Run("Register", func(t *testing.T) {
				a, b := socketPair(t)
				p := newPoll(t)
				writeFd(t, b, []byte("x"))
				res := startPollForever(p)
				waitSelecting(t, p, 0)
				require.NoError(t, p.Register(Fd(a), 1, Readable, opts))
				require.Equal(t, []Event{{Token: 1, Ready: Readable}}, res.wait(t, p))
			})
			t.Run("DeregisterWhileBlocked", func(t *testing.T) {
				// Deregister while a Poll is blocked: readiness of the
				// deregistered descriptor is not reported, and the Poll
				// goes on waiting for the one still registered.
				a, b := socketPair(t)
				c, d := socketPair(t)
				p := newPoll(t)
				require.NoError(t, p.Register(Fd(a), 1, Readable, opts))
				require.NoError(t, p.Register(Fd(c), 2, Readable, opts))
				res := startPollForever(p)
				waitSelecting(t, p, 0)
				require.NoError(t, p.Deregister(Fd(a)))
				writeFd(t, b, []byte("x"))
				waitKernelReady(t, a, unix.POLLIN)
				writeFd(t, d, []byte("x"))
				require.Equal(t, []Event{{Token: 2, Ready: Readable}}, res.wait(t, p))
			})
			t.Run("ReregisterOneshot", func(t *testing.T) {
				a, b := socketPair(t)
				p := newPoll(t)
				ev := NewEvents(4)
				writeFd(t, b, []byte("x"))
				require.NoError(t, p.Register(Fd(a), 1, Readable, opts|Oneshot))
				requireEvent(t, p, ev, 1, Readable)
				before := p.Stats().Selects
				res := startPollForever(p)
				waitSelecting(t, p, before)
				require.NoError(t, p.Reregister(Fd(a), 2, Readable, opts|Oneshot))
				require.Equal(t, []Event{{Token: 2, Ready: Readable}}, res.wait(t, p))
			})
		})
	})
}

// foreverPoll is a Poll(ev, -1) running in its own goroutine.
type foreverPoll struct {
	ch chan foreverOutcome
}

type foreverOutcome struct {
	evs []Event
	err error
}

// blockedPoll starts p.Poll(ev, -1) in a goroutine.
func startPollForever(p *Poll) foreverPoll {
	r := foreverPoll{ch: make(chan foreverOutcome, 1)}
	go func() {
		ev := NewEvents(8)
		_, err := p.Poll(ev, -1)
		var evs []Event
		for e := range ev.All() {
			evs = append(evs, e)
		}
		r.ch <- foreverOutcome{evs, err}
	}()
	return r
}

// wait returns the blocked Poll's events. If it does not return within
// eventWait it closes p (which must make the Poll return) and fails.
func (r foreverPoll) wait(t testing.TB, p *Poll) []Event {
	t.Helper()
	select {
	case o := <-r.ch:
		require.NoError(t, o.err)
		requireUniqueTokens(t, o.evs)
		return o.evs
	case <-time.After(eventWait):
		_ = p.Close()
		<-r.ch
		require.FailNow(t, "blocked Poll(-1) was not woken")
		return nil
	}
}

// ---------------------------------------------------------------------------
// Concurrent Poll callers, fairness, timeouts, Stats

// Concurrent Poll callers are serialised: two goroutines polling one Poll
// with small buffers, while level-triggered descriptors stay ready all the
// time, between them see every edge and oneshot event of a round exactly
// once (edge sources are drained and re-armed after each round), and nothing is
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
				require.NoError(t, Fd(s.r).Rearm(p, Readable))
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
