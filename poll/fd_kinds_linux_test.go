package poll

// Kinds of readiness on kinds of descriptors, for the contract tests
// (fd_contract*_linux_test.go): a way to make a descriptor ready for one
// kind of readiness, and not ready again.

import (
	"testing"

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
