//go:build unix

package sys

import (
	"os"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/sys/unix"
)

func init() {
	backends[BackendPoll] = openPoll
}

// pollSelector is the poll(2) backend. poll(2) keeps no state in the kernel,
// so the registrations live here, in a table guarded by mu, and Select hands
// the kernel an array of pollfds built from that table.
//
// Modes:
//   - Level is what poll(2) does.
//   - Edge is emulated by level triggering: a descriptor is reported on every
//     Select while it is ready, which the contract allows (spurious events,
//     never a lost one). The exception is a lasting hang-up or error with
//     nothing else ready: once reported, the descriptor rests out of the
//     array and is looked at again every restRecheck, so that it neither
//     spins the caller nor hides a later change.
//   - Oneshot: once reported, the registration is disarmed (left out of the
//     kernel's view) until Modify re-arms it.
//
// Invariants (mu guards the table, list, dirty and blocked):
//   - The pollfd array, pfds, and its twin slots are owned by the goroutine
//     in Select; pfds[0] is the waker, pfds[i] for i >= 1 was built from
//     slots[i].e when its generation was slots[i].gen.
//   - Every Add and Modify bumps the entry's generation and sets dirty; so
//     does Delete, which also unlinks the entry. Select rebuilds the array
//     before polling whenever dirty is set.
//   - A result is reported only if its entry's generation still equals the
//     one the array was built from, checked under mu: an event harvested
//     for a registration that was modified or deleted meanwhile is dropped.
//     It is never lost: a modified registration is polled afresh (level
//     triggered) on the next pass, and a deleted one must not be reported.
//   - blocked is set, under mu, from just before Select polls until it has
//     locked mu again afterwards. Add and Modify made while blocked is set
//     nudge the waker so the blocked poll returns and Select rebuilds and
//     polls again; Select does not return to its caller for a nudge.
//     Delete does not nudge: the stale slot is harmless, as its results are
//     dropped.
//   - The waker is drained BEFORE the gate is reset, not after. The gate
//     lets one write through per pending period; a write let through after
//     the reset but drained before it was polled would leave the gate
//     pending over an empty waker, and every later Wake would coalesce into
//     that lost write. Drained first, the waker holds exactly the period's
//     one write (which is what fired); a Wake between drain and reset finds
//     the gate pending and writes nothing, and is answered by this Select.
//   - wakeCalled tells a caller's Wake from a nudge. Wake sets it before
//     wakeGate.begin; Select, after seeing the waker fire, drains it, resets
//     the gate and then swaps wakeCalled to false. A Wake whose begin found
//     the gate pending (so wrote nothing) set the flag before the reset, so
//     this Select reports woken; one whose begin came after the reset wrote,
//     and the next poll sees it.
type pollSelector struct {
	waker      fdWaker
	gate       wakeGate
	wakeCalled atomic.Bool
	closed     atomic.Bool
	// closeMu keeps Close from closing the waker under a write in flight,
	// which could otherwise land in a descriptor that reused its number.
	closeMu sync.RWMutex

	mu      sync.Mutex
	table   map[int]*pollEntry
	list    []*pollEntry // the table in a stable order; entry.idx is its position
	dirty   bool
	blocked bool

	// Owned by the goroutine in Select.
	pfds  []unix.PollFd
	slots []pollSlot
	start int // rotation: where the next scan for results begins
	// resting counts edge registrations left out of the array because all
	// they had to say was a hang-up or error already reported; they are put
	// back at the next rebuild, at the latest restRecheck later.
	resting int
	restAt  time.Time // when the first of them was left out
	polls   uint64    // poll(2) calls made, for tests
}

// pollEntry is one registration.
// restRecheck is how often resting registrations are polled again.
const restRecheck = 10 * time.Millisecond

type pollEntry struct {
	fd       int
	key      uint64
	interest uint32
	mode     Mode
	armed    bool   // false after a oneshot event or POLLNVAL, until Modify
	reported uint32 // edge mode: the lasting Error|Hup bits already reported
	gen      uint64 // bumped by Modify and Delete
	idx      int    // position in list
}

// pollSlot records which registration, at which generation, a pollfd was
// built from.
type pollSlot struct {
	e   *pollEntry
	gen uint64
}

func openPoll() (Selector, error) {
	w, err := newFdWaker()
	if err != nil {
		return nil, err
	}
	return newPollSelector(w), nil
}

func newPollSelector(w fdWaker) *pollSelector {
	return &pollSelector{
		waker: w,
		table: make(map[int]*pollEntry),
		dirty: true,
	}
}

func (s *pollSelector) Name() string { return BackendPoll }

// setPollEvents fills p.Events for interest. The constants are untyped, so
// this compiles whatever integer type this system's PollFd uses.
func setPollEvents(p *unix.PollFd, interest uint32) {
	p.Events = 0
	if interest&Readable != 0 {
		p.Events |= unix.POLLIN
	}
	if interest&(Readable|Hup) != 0 {
		p.Events |= pollRdHup // a peer's half-close is a hang-up to report
	}
	if interest&Writable != 0 {
		p.Events |= unix.POLLOUT
	}
	if interest&Priority != 0 {
		p.Events |= unix.POLLPRI
	}
}

func pollReady(p *unix.PollFd) uint32 {
	rev := p.Revents
	var r uint32
	if rev&unix.POLLIN != 0 {
		r |= Readable
	}
	if rev&unix.POLLOUT != 0 {
		r |= Writable
	}
	if rev&unix.POLLERR != 0 {
		r |= Error
	}
	if rev&(unix.POLLHUP|pollRdHup) != 0 {
		r |= Hup
	}
	if rev&unix.POLLPRI != 0 {
		r |= Priority
	}
	return r
}

func (s *pollSelector) Add(fd int, key uint64, interest uint32, mode Mode) error {
	// poll(2) would accept any number and report POLLNVAL later; fail now,
	// as epoll_ctl does, for a descriptor that is not open.
	if fd < 0 {
		return os.NewSyscallError("poll(add)", unix.EBADF)
	}
	if _, err := unix.FcntlInt(uintptr(fd), unix.F_GETFD, 0); err != nil {
		return os.NewSyscallError("poll(add)", err)
	}
	s.mu.Lock()
	if _, ok := s.table[fd]; ok {
		s.mu.Unlock()
		return os.NewSyscallError("poll(add)", unix.EEXIST)
	}
	e := &pollEntry{fd: fd, key: key, interest: interest, mode: mode, armed: true, idx: len(s.list)}
	s.table[fd] = e
	s.list = append(s.list, e)
	nudge := s.changedLocked()
	s.mu.Unlock()
	if nudge {
		s.nudge()
	}
	return nil
}

func (s *pollSelector) Modify(fd int, key uint64, interest uint32, mode Mode) error {
	s.mu.Lock()
	e, ok := s.table[fd]
	if !ok {
		s.mu.Unlock()
		return os.NewSyscallError("poll(modify)", unix.ENOENT)
	}
	e.key, e.interest, e.mode = key, interest, mode
	e.armed, e.reported = true, 0
	e.gen++
	nudge := s.changedLocked()
	s.mu.Unlock()
	if nudge {
		s.nudge()
	}
	return nil
}

func (s *pollSelector) Delete(fd int) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	e, ok := s.table[fd]
	if !ok {
		return os.NewSyscallError("poll(delete)", unix.ENOENT)
	}
	delete(s.table, fd)
	last := len(s.list) - 1
	moved := s.list[last]
	s.list[e.idx] = moved
	moved.idx = e.idx
	s.list[last] = nil
	s.list = s.list[:last]
	e.gen++ // results already harvested for it are now stale
	s.changedLocked()
	return nil
}

// changedLocked marks the array for rebuilding and reports whether a Select
// is blocked on the old one and must be nudged.
func (s *pollSelector) changedLocked() bool {
	s.dirty = true
	return s.blocked
}

// nudge wakes a blocked Select without making it report woken. It shares
// the gate with Wake: one pending write serves both.
func (s *pollSelector) nudge() {
	if !s.closed.Load() && s.gate.begin() {
		_ = s.writeWaker()
	}
}

// writeWaker performs the write that wakeGate.begin granted.
func (s *pollSelector) writeWaker() error {
	s.closeMu.RLock()
	defer s.closeMu.RUnlock()
	if s.closed.Load() {
		return nil
	}
	if err := s.waker.wake(); err != nil {
		s.gate.abort()
		return err
	}
	return nil
}

// rebuildLocked rebuilds the pollfd array from the table.
func (s *pollSelector) rebuildLocked() {
	n := 1 + len(s.list)
	if cap(s.pfds) < n {
		s.pfds = make([]unix.PollFd, n, n+n/4)
		s.slots = make([]pollSlot, n, cap(s.pfds))
	}
	clear(s.slots[n:cap(s.slots)]) // let deleted entries go
	s.pfds = s.pfds[:n]
	s.slots = s.slots[:n]
	s.pfds[0] = unix.PollFd{Fd: int32(s.waker.fd()), Events: unix.POLLIN}
	s.slots[0] = pollSlot{}
	for i, e := range s.list {
		p := &s.pfds[i+1]
		// A disarmed entry gets a negative descriptor, which poll(2)
		// skips. Events = 0 would not do: POLLHUP, POLLERR and POLLNVAL
		// are reported whatever the events asked for.
		p.Fd = -1
		if e.armed {
			p.Fd = int32(e.fd)
		}
		setPollEvents(p, e.interest)
		p.Revents = 0
		s.slots[i+1] = pollSlot{e: e, gen: e.gen}
	}
	s.dirty = false
	s.resting = 0
}

func (s *pollSelector) Select(events []Event, timeout time.Duration) (int, bool, error) {
	if len(events) == 0 {
		return 0, false, errEmptyBuffer
	}
	dl := newDeadline(timeout)
	for {
		s.mu.Lock()
		wait, recheck := dl.remaining(), false
		if s.resting > 0 {
			// Resting registrations are looked at again restRecheck after
			// they were left out, however short the caller's timeouts.
			due := restRecheck - time.Since(s.restAt)
			if due <= 0 {
				s.dirty = true
			} else if wait < 0 || wait > due {
				wait, recheck = due, true
			}
		}
		if s.dirty {
			s.rebuildLocked()
		}
		s.blocked = true
		s.mu.Unlock()

		n, err := pollWait(s.pfds, wait)
		s.polls++

		s.mu.Lock()
		s.blocked = false
		out, fired := 0, false
		if err == nil && n > 0 {
			fired = s.pfds[0].Revents != 0
			out = s.collectLocked(events)
		}
		s.mu.Unlock()

		if err == unix.EINTR {
			continue
		}
		if err != nil {
			return 0, false, os.NewSyscallError("poll", err)
		}
		if recheck && n == 0 {
			// Time to look at the resting registrations again.
			s.mu.Lock()
			s.dirty = true
			s.mu.Unlock()
			continue
		}
		woken := false
		if fired {
			s.waker.drain() // before reset: see the invariants above
			s.gate.reset()
			woken = s.wakeCalled.Swap(false)
		}
		// n == 0 is the timeout. Otherwise keep polling, with the time that
		// is left, when all that fired was a nudge or results that turned
		// out stale, disarmed or POLLNVAL.
		if out > 0 || woken || n == 0 || dl.remaining() == 0 {
			return out, woken, nil
		}
	}
}

// collectLocked turns the array's results into at most len(events) events.
//
// The scan starts where the previous one stopped reporting, so that when
// more descriptors are ready than events has room for, every one gets its
// turn. Level-triggered descriptors left over are still ready next time;
// oneshot ones left over are not disarmed, as they were not reported.
func (s *pollSelector) collectLocked(events []Event) int {
	nslots := len(s.pfds) - 1
	if nslots == 0 {
		return 0
	}
	if s.start >= nslots {
		s.start = 0
	}
	out, last := 0, -1
	for j := 0; j < nslots && out < len(events); j++ {
		i := 1 + (s.start+j)%nslots
		p := &s.pfds[i]
		if p.Revents == 0 {
			continue
		}
		slot := &s.slots[i]
		e := slot.e
		if e.gen != slot.gen || !e.armed {
			continue // modified, deleted or disarmed since the array was built
		}
		if p.Revents&unix.POLLNVAL != 0 {
			// The descriptor was closed without Delete. POLLNVAL would be
			// reported on every poll, so reporting it as Error|Hup would
			// spin the caller, and the number may already belong to an
			// unrelated descriptor that this registration does not own.
			// Disarm it until Modify or Delete, silently, as epoll would
			// have dropped the registration on close.
			e.armed = false
			p.Fd = -1
			continue
		}
		ready := pollReady(p)
		if e.mode&(Edge|Oneshot) == Edge {
			// Emulated edge: a hang-up or error lasts, and poll(2) reports
			// it on every call whatever was asked. Once reported it is not
			// news: leave the descriptor out of the array instead of
			// spinning, and look again at the next rebuild (restRecheck
			// at the latest), so that a new kind (an error after a
			// hang-up) still arrives, late by at most that, never lost.
			lasting := ready & (Error | Hup)
			if ready == lasting && lasting&^e.reported == 0 {
				p.Fd = -1
				if s.resting == 0 {
					s.restAt = time.Now()
				}
				s.resting++
				continue
			}
			e.reported |= lasting
		}
		events[out] = Event{Key: e.key, Ready: ready}
		out++
		last = j
		if e.mode&Oneshot != 0 {
			e.armed = false
			p.Fd = -1
		}
	}
	if last >= 0 {
		s.start = (s.start + last + 1) % nslots
	}
	return out
}

func (s *pollSelector) Wake() error {
	if s.closed.Load() {
		return nil
	}
	s.wakeCalled.Store(true)
	if !s.gate.begin() {
		return nil
	}
	return s.writeWaker()
}

// WakerWrites counts writes to the waker, including the nudges that make a
// blocked Select see a registration change.
func (s *pollSelector) WakerWrites() uint64 { return s.gate.writes.Load() }

// Close closes the waker; poll(2) holds nothing else in the kernel.
func (s *pollSelector) Close() error {
	s.closeMu.Lock()
	defer s.closeMu.Unlock()
	if s.closed.Swap(true) {
		return nil
	}
	return s.waker.close()
}
