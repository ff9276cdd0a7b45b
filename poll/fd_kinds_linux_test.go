package poll

// Kinds of readiness on kinds of descriptors, for the contract tests
// (fd_contract*_linux_test.go): a way to make a descriptor ready for one
// kind of readiness, and not ready again.

import (
	"errors"
	"fmt"
	"testing"
	"time"

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
	// early, if not 0, is what an event may show instead of want when a
	// Poll looks while the kernel is still making the change, which it
	// makes in steps (tryReset). The rest is new readiness, for a later
	// event (requireRest).
	early Ready
	raw   int16 // poll(2) events showing the kernel has it (waitKernelReady)
	open  func(t *testing.T) kindFd
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
		// The peer's FIN is made in steps too: the socket counts it as
		// input (rcv_nxt moves past it) before it marks the receive side
		// shut down, so a look in between sees Readable without Hup.
		name: "hangup/tcp", interest: Readable | Hup, want: Readable | Hup, raw: unix.POLLIN | unix.POLLRDHUP,
		early: Readable,
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
			return kindFd{fd: c, trigger: func() error { return tryReset(t, s, c) }}
		},
	},
	{
		// The same, with every kind asked for: an error makes the socket
		// readable and writable too (maskReady). A look in the middle of
		// the reset sees the error without the hang-up (tryReset).
		name: "error/tcp-reset-all", interest: Readable | Writable | Error | Hup, want: Readable | Writable | Error | Hup, raw: 0,
		early: Readable | Writable | Error,
		open: func(t *testing.T) kindFd {
			c, s := tcpPair(t)
			resetOnClose(t, s)
			fill(t, c) // not writable before the reset
			return kindFd{fd: c, trigger: func() error { return tryReset(t, s, c) }}
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

// forModesKinds runs fn on every backend, in every mode named (all for
// nil, as forModes), on every kind of descriptor: the loops most rule
// tests of descriptors are made of.
func forModesKinds(t *testing.T, names []string, fn func(t *testing.T, p *Poll, opts PollOpt, k readyKind, kf kindFd)) {
	forEachBackend(t, func(t *testing.T, newPoll newPollFunc) {
		forModes(t, names, func(t *testing.T, opts PollOpt) {
			forEachKind(t, newPoll, func(t *testing.T, p *Poll, k readyKind, kf kindFd) {
				fn(t, p, opts, k, kf)
			})
		})
	})
}

// tryReset closes s, which resetOnClose made send a RST, and returns once
// its peer c shows the whole reset. Linux resets a socket in steps
// (tcp_done_with_error and tcp_done, net/ipv4/tcp_input.c and tcp.c): it
// sets the socket's error, purges the send queue, then marks the socket
// closed and shut down both ways, while tcp_poll, which takes no lock,
// reads the state and the shutdown bits before the error. A look in
// between sees POLLERR, and POLLOUT once the queue is purged, without
// POLLHUP or POLLRDHUP; a look that sees the hang-up sees the error too
// (the two barriers pair). Over loopback the reset is usually made whole
// inside close, but it may be left to the softirq thread, so tests that
// look after fire wait for its last step here. A Poll already looking
// while the reset is made can still see a step (readyKind.early). Safe
// from any goroutine.
func tryReset(t testing.TB, s, c int) error {
	if err := tryCloseFd(t, s); err != nil {
		return err
	}
	return tryWaitShows(c, unix.POLLERR|unix.POLLHUP|unix.POLLRDHUP, eventWait)
}

// tryWaitShows waits, with poll(2) directly and not through a Poll, until
// the kernel shows every one of events on fd, and fails after within.
// Unlike waitKernelReady, an error or hang-up alone does not end the wait.
// Safe from any goroutine.
func tryWaitShows(fd int, events int16, within time.Duration) error {
	deadline := time.Now().Add(within)
	for {
		pfd := []unix.PollFd{{Fd: int32(fd), Events: events}}
		_, err := unix.Poll(pfd, 10)
		if err != nil && !errors.Is(err, unix.EINTR) {
			return fmt.Errorf("poll(2): %w", err)
		}
		if pfd[0].Revents&events == events {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("fd %d: kernel shows %#x, never all of %#x", fd, pfd[0].Revents, events)
		}
	}
}

// requireRest checks that readiness which arrived after an event for tok
// (the rest of a change the kernel made in steps, all of it shown by now)
// is reported as the mode says: under Edge by one more event, as new
// readiness (rule 2); under Level by the next Poll (rule 3); under Oneshot
// by nothing until Reregister re-arms it, then by the next Poll (rules 4
// and 5). want is the readiness of the whole change.
func requireRest(t *testing.T, p *Poll, fd int, tok Token, interest Ready, opts PollOpt, want Ready) {
	t.Helper()
	ev := NewEvents(8)
	switch {
	case opts.IsOneshot():
		requireNoEvents(t, p, ev)
		require.NoError(t, p.Reregister(Fd(fd), tok, interest, opts))
		requireNext(t, p, ev, tok, want)
	case opts.IsEdge():
		// Where edge is emulated, a registration whose first event left
		// only a lasting error rests, and the hang-up is seen at its next
		// look (sys/poll_rest_unix.go): wait for it.
		requireEvent(t, p, ev, tok, want)
		requireNoEvents(t, p, ev)
	default:
		requireNext(t, p, ev, tok, want)
	}
}

// requireQuietAfterRefire makes kf ready anew, where the kind can be made
// not ready first, and checks that p still reports nothing for it: the
// registration is gone or disarmed, so new readiness must not revive it.
func requireQuietAfterRefire(t *testing.T, p *Poll, ev *Events, kf kindFd, k readyKind) {
	t.Helper()
	if kf.clear == nil {
		return
	}
	kf.unfire(t)
	kf.fire(t)
	waitKernelReady(t, kf.fd, k.raw)
	requireNoEvents(t, p, ev)
}
