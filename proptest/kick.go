//go:build linux

package proptest

import (
	"golang.org/x/sys/unix"
	"pgregory.net/rapid"

	"github.com/unipoll/unipoll/poll"
)

// kickToken is the token of a kicker's descriptor.
const kickToken = poll.Token(1 << 42)

// A kicker is a socket registered level-triggered with a Poll, so that a
// property that has found a failure can end a Poll blocked forever even
// when the bug under test broke the Poll's own wake-up (then Poll.Close,
// which wakes the poller through the same waker, would wait for it
// forever). Once kicked the descriptor stays readable, so the poller
// never blocks again and Close gets its turn.
type kicker struct{ a, b int }

func newKicker(t *rapid.T, p *poll.Poll) *kicker {
	fds, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_STREAM|unix.SOCK_NONBLOCK|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		t.Fatalf("socketpair: %v", err)
	}
	if err := p.Register(poll.Fd(fds[0]), kickToken, poll.Readable, poll.Level); err != nil {
		t.Fatalf("Register kicker: %v", err)
	}
	return &kicker{a: fds[0], b: fds[1]}
}

func (k *kicker) kick() { _, _ = unix.Write(k.b, []byte{1}) }

// close closes both ends; closing again does nothing (the numbers may
// belong to new descriptors by then).
func (k *kicker) close() {
	closeAll(k.a, k.b)
	k.a, k.b = -1, -1
}
