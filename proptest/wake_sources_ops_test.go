//go:build linux

package proptest

// The producers' steps of TestConcurrentWakeSources (wake_sources_test.go).

import (
	"fmt"
	"sync/atomic"
	"time"

	"golang.org/x/sys/unix"

	"github.com/unipoll/unipoll/poll"
)

// wsRun performs one producer step. It reports whether an event is now owed
// (the consumer must report the source under s.awaiting), and from when:
// for a delay, the latest moment it may fire.
func wsRun(p *poll.Poll, s *wsSource, op wsOp, issue func(*wsSource) poll.Token, retire func(poll.Token), tick time.Duration) (owed bool, from time.Time, err error) {
	switch op.what {
	case "set":
		s.awaiting.Store(uint64(s.tok))
		err = s.set.SetReadiness(poll.Readable)
		return true, time.Now(), err
	case "write":
		s.awaiting.Store(uint64(s.tok))
		_, err = unix.Write(s.b, []byte{1})
		return true, time.Now(), err
	case "delay":
		s.awaiting.Store(uint64(s.tok))
		err = s.set.DelayReadiness(poll.Readable, op.delay)
		// At most one tick late, plus the tick a millisecond-rounded wait
		// may add before the wheel looks.
		return true, time.Now().Add(op.delay + 2*tick), err
	case "delay outside":
		return false, time.Time{}, s.set.DelayReadiness(poll.Writable, op.delay)
	case "reregister idle":
		return false, time.Time{}, p.Reregister(s.evented(), s.tok, poll.Readable, s.opts)
	case "deregister and register idle":
		if err := p.Deregister(s.evented()); err != nil {
			return false, time.Time{}, err
		}
		retire(s.tok)
		s.tok = issue(s)
		return false, time.Time{}, p.Register(s.evented(), s.tok, poll.Readable, s.opts)
	case "change":
		if op.mute {
			// Nobody sets Priority on a Registration or sends a socket
			// urgent data here.
			err = p.Reregister(s.evented(), s.tok, poll.Priority, s.opts)
		} else {
			err = p.Deregister(s.evented())
		}
		if err != nil {
			return false, time.Time{}, err
		}
		if s.reg != nil {
			err = s.set.SetReadiness(poll.Readable)
		} else {
			_, err = unix.Write(s.b, []byte{1})
		}
		if err != nil {
			return false, time.Time{}, err
		}
		old := s.tok
		s.tok = issue(s)
		s.awaiting.Store(uint64(s.tok))
		if op.mute {
			err = p.Reregister(s.evented(), s.tok, poll.Readable, s.opts)
		} else {
			err = p.Register(s.evented(), s.tok, poll.Readable, s.opts)
		}
		retire(old)
		return true, time.Now(), err
	}
	return false, time.Time{}, fmt.Errorf("unknown op %q", op.what)
}

// spinSink keeps spin's loop from being optimised away.
var spinSink atomic.Uint64

// spin busy-waits for about n iterations of a cheap loop, a delay far
// finer than any sleep.
func spin(n int) {
	x := uint64(0)
	for i := 0; i < n; i++ {
		x = x*2862933555777941757 + 3037000493
	}
	spinSink.Store(x)
}
