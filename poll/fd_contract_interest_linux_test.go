package poll

// Rule 6 of the contract for descriptors: readiness outside the interest
// set is never reported; and how hang-ups and errors map to readiness.

import (
	"testing"

	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"
)

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
