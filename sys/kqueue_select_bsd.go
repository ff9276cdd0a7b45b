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

// Filter bits: which of a registration's filters a harvest saw.
const (
	kqRead uint8 = 1 << iota
	kqWrite
)

// kqHarvest is what Select saw for one event it filled: the descriptor,
// the filters the harvest held for it, and the oneshot registration the
// event used up (nil if none).
type kqHarvest struct {
	ident   int
	filters uint8
	spent   *kqReg
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
		// At most two clean-up deletions per event: see disarmLocked.
		s.changes = newKevents(2 * len(events))
		s.receipts = newKevents(2 * len(events))
		s.harvest = make([]kqHarvest, len(events))
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
		out, woken := s.collect(events, buf[:n], seen)
		if woken {
			// Drain before reset, as in pollSelector: a pipe waker
			// drained after the reset could swallow a write the gate
			// still counts as pending, and every later Wake would be
			// lost. (EVFILT_USER has nothing to drain.)
			s.waker.drain()
			s.gate.reset()
		}
		// Wait again, with the time left, when the cap ended the wait or
		// every event harvested was stale or a oneshot's second.
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
// key, and holds oneshot registrations to one event each (see kqSelector):
// a oneshot kevent is looked up in the table, under mu, and makes an event
// only for the registration of its descriptor that carries its key, and
// only if that registration has not made one since it was installed; the
// filters it has left are then deleted (disarmLocked) before mu is let go,
// so no Modify can slip in between. seen is the epoch loaded before the
// wait.
//
// Where udata holds the key, kevents that are not oneshot take no lock.
func (s *kqSelector) collect(events []Event, harvested []unix.Kevent_t, seen uint64) (out int, woken bool) {
	locked, spent := false, false
	if !udataHoldsKey && len(harvested) > 0 {
		s.mu.Lock()
		locked = true
	}
	merging := len(harvested) > 1
	for i := range harvested {
		k := &harvested[i]
		if s.waker.isWaker(k) {
			woken = true
			continue
		}
		ident := int(k.Ident)
		var r *kqReg
		var key uint64
		if udataHoldsKey {
			key = getUdata(k)
		} else {
			var ok bool
			r, ok = s.regs[ident]
			if !ok || uint64(r.tag) != getUdata(k) {
				continue // deleted or modified since the kernel queued it
			}
			key = r.key
		}
		j := out
		if merging {
			if at, ok := s.merge[key]; ok {
				j = at
			}
		}
		var spends *kqReg
		if int(k.Flags)&unix.EV_ONESHOT != 0 {
			if !locked {
				s.mu.Lock()
				locked = true
			}
			if r == nil {
				r = s.regs[ident]
			}
			// The other filter of a registration this harvest has
			// already spent merges into its event; any other oneshot
			// kevent must spend its registration first.
			if j == out || r == nil || s.harvest[j].spent != r {
				var ok bool
				if spends, ok = spendLocked(r, key); !ok {
					continue
				}
			}
		}
		if j == out {
			if merging {
				s.merge[key] = out
			}
			events[out] = Event{Key: key}
			s.harvest[out] = kqHarvest{ident: ident}
			out++
		}
		ready, filter := kqReady(k)
		events[j].Ready |= ready
		s.harvest[j].filters |= filter
		if spends != nil {
			s.harvest[j].spent = spends
			spent = true
		}
	}
	if merging {
		for i := 0; i < out; i++ {
			delete(s.merge, events[i].Key)
		}
	}
	if spent {
		s.disarmLocked(out, seen)
	}
	if locked {
		s.mu.Unlock()
	}
	return out, woken
}

// spendLocked decides whether a harvested oneshot kevent carrying key for
// the descriptor whose registration is r (nil: none) makes an event, and
// returns the registration the event uses up, if any:
//   - no registration, or one with another key: the kevent is stale (its
//     registration was deleted or replaced); no event;
//   - a registration that is no longer oneshot (a Modify made it level or
//     edge since): the kevent is its predecessor's; an event, which the
//     contract allows (a spurious one at worst), and nothing used up;
//   - a oneshot registration that has made its event already: the other
//     filter, or a filter of its predecessor, firing late; no event;
//   - otherwise the event is the registration's one event.
//
// A kevent of a predecessor with the same key, harvested after a Modify,
// counts as the new registration's event: the caller cannot tell them
// apart, and after it the registration is disarmed until the next Modify,
// as the contract says.
func spendLocked(r *kqReg, key uint64) (*kqReg, bool) {
	switch {
	case r == nil || r.key != key:
		return nil, false
	case r.mode&Oneshot == 0:
		return nil, true
	case r.spent:
		return nil, false
	}
	r.spent = true
	return r, true
}

// disarmLocked deletes what is left in the kernel of each oneshot
// registration the harvest used up. The kernel drops a oneshot filter once
// it fires: of a registration unchanged since before the wait (epoch not
// newer than seen) only the filters that did not fire are left; one
// installed during or after the wait may have had a filter added afresh
// after the harvest, so all of its filters are deleted (ENOENT, for one
// the kernel dropped, is ignored). Failures are ignored: the registration
// is spent, so a leftover filter that fires makes no event.
func (s *kqSelector) disarmLocked(out int, seen uint64) {
	n := 0
	for j := 0; j < out; j++ {
		h := &s.harvest[j]
		r := h.spent
		if r == nil {
			continue
		}
		h.spent = nil
		gone := uint8(0)
		if r.epoch <= seen {
			gone = h.filters
		}
		if r.interest&Readable != 0 && gone&kqRead == 0 {
			setKevent(&s.changes[n], h.ident, unix.EVFILT_READ, unix.EV_DELETE, 0)
			n++
		}
		if r.interest&Writable != 0 && gone&kqWrite == 0 {
			setKevent(&s.changes[n], h.ident, unix.EVFILT_WRITE, unix.EV_DELETE, 0)
			n++
		}
		r.interest = 0 // its filters are all gone now
	}
	_ = s.apply(s.changes[:n])
}
