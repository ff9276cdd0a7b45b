//go:build darwin || freebsd || netbsd || openbsd || dragonfly

package sys

import (
	"os"
	"time"

	"golang.org/x/sys/unix"
)

// maxKqTimeout caps one kevent wait: darwin rejects very long timeouts
// with EINVAL. Select waits again when the cap, not the deadline, ended the
// wait.
const maxKqTimeout = 1e6 * time.Second

// Filter bits, for tracking which of a registration's filters fired.
const (
	kqRead uint8 = 1 << iota
	kqWrite
)

// kqFired is what Select saw fire for one event it filled.
type kqFired struct {
	ident   int
	filters uint8
	oneshot bool
}

// kqReady maps a harvested kevent to readiness bits and the filter that
// fired.
func kqReady(k *unix.Kevent_t) (uint32, uint8) {
	var ready uint32
	var filter uint8
	switch int(k.Filter) {
	case unix.EVFILT_READ:
		ready, filter = Readable, kqRead
	case unix.EVFILT_WRITE:
		ready, filter = Writable, kqWrite
	}
	flags := int(k.Flags)
	if flags&unix.EV_ERROR != 0 {
		return Error, filter
	}
	if flags&unix.EV_EOF != 0 {
		ready |= Hup
		if k.Fflags != 0 { // the socket's pending error
			ready |= Error
		}
	}
	return ready, filter
}

func (s *kqSelector) Select(events []Event, timeout time.Duration) (int, bool, error) {
	// Read and write filters of one key merge into one event, so asking the
	// kernel for len(events) kevents never harvests more than fits.
	if len(events) == 0 {
		return 0, false, ErrEmptyBuffer
	}
	if s.closed.Load() {
		return 0, false, ErrClosed
	}
	if len(s.buf) < len(events) {
		s.buf = newKevents(len(events))
		// At most two clean-up deletions per event: see disarmRest.
		s.changes = newKevents(2 * len(events))
		s.receipts = newKevents(2 * len(events))
		s.fired = make([]kqFired, len(events))
	}
	buf := s.buf[:len(events)]
	dl := newDeadline(timeout)
	for {
		seen := s.epoch.Load()
		wait := dl.remaining()
		if wait > maxKqTimeout {
			wait = maxKqTimeout
		}
		n, err := s.wait(buf, wait)
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			return 0, false, os.NewSyscallError("kevent", err)
		}
		out, woken, oneshots := s.collect(events, buf[:n])
		if woken {
			// Drain before reset, as in pollSelector: a pipe waker
			// drained after the reset could swallow a write the gate
			// still counts as pending, and every later Wake would be
			// lost. (EVFILT_USER has nothing to drain.)
			s.waker.drain()
			s.gate.reset()
		}
		if oneshots {
			s.disarmRest(out, seen)
		}
		// Wait again, with the time left, when the cap ended the wait or
		// every event harvested was stale.
		if out > 0 || woken || dl.remaining() == 0 {
			return out, woken, nil
		}
	}
}

func (s *kqSelector) wait(buf []unix.Kevent_t, timeout time.Duration) (int, error) {
	s.waits.Add(1)
	if timeout < 0 {
		return unix.Kevent(s.kq, nil, buf, nil)
	}
	ts := unix.NsecToTimespec(int64(timeout))
	return unix.Kevent(s.kq, nil, buf, &ts)
}

// collect turns harvested kevents into events, merging the filters of one
// key, and records in s.fired what fired for each event.
func (s *kqSelector) collect(events []Event, harvested []unix.Kevent_t) (out int, woken, oneshots bool) {
	if !udataHoldsKey && len(harvested) > 0 {
		s.mu.Lock()
		defer s.mu.Unlock()
	}
	merging := len(harvested) > 1
	for i := range harvested {
		k := &harvested[i]
		if s.waker.isWaker(k) {
			woken = true
			continue
		}
		ident := int(k.Ident)
		var key uint64
		if udataHoldsKey {
			key = getUdata(k)
		} else {
			r, ok := s.regs[ident]
			if !ok || uint64(r.tag) != getUdata(k) {
				continue // deleted or modified since the kernel queued it
			}
			key = r.key
		}
		ready, filter := kqReady(k)
		j := out
		if merging {
			if at, ok := s.merge[key]; ok {
				j = at
			} else {
				s.merge[key] = out
			}
		}
		if j == out {
			events[out] = Event{Key: key}
			s.fired[out] = kqFired{ident: ident}
			out++
		}
		events[j].Ready |= ready
		s.fired[j].filters |= filter
		if int(k.Flags)&unix.EV_ONESHOT != 0 {
			s.fired[j].oneshot = true
			oneshots = true
		}
	}
	if merging {
		for i := 0; i < out; i++ {
			delete(s.merge, events[i].Key)
		}
	}
	return out, woken, oneshots
}

// disarmRest deletes the filter that did not fire of each oneshot
// registration reported by the last wait (the kernel dropped the one that
// did), provided the registration has not changed since before the wait.
// Failures are ignored: the leftover filter can at worst fire once more.
func (s *kqSelector) disarmRest(out int, seen uint64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := 0
	for j := 0; j < out; j++ {
		f := &s.fired[j]
		if !f.oneshot {
			continue
		}
		r, ok := s.regs[f.ident]
		if !ok || r.epoch > seen || r.mode&Oneshot == 0 {
			continue
		}
		if r.interest&Readable != 0 && f.filters&kqRead == 0 {
			setKevent(&s.changes[n], f.ident, unix.EVFILT_READ, unix.EV_DELETE, 0)
			n++
		}
		if r.interest&Writable != 0 && f.filters&kqWrite == 0 {
			setKevent(&s.changes[n], f.ident, unix.EVFILT_WRITE, unix.EV_DELETE, 0)
			n++
		}
		r.interest = 0 // its filters are all gone now
	}
	_ = s.apply(s.changes[:n])
}
