//go:build unix

package sys

import (
	"os"
	"sync"
	"sync/atomic"

	"golang.org/x/sys/unix"
)

func init() {
	backends[BackendPoll] = openPoll
}

// pollSelector is the poll(2) backend. poll(2) keeps no state in the kernel,
// so the registrations live here, in a table guarded by mu, and Select hands
// the kernel an array of pollfds built from that table (poll_select_unix.go).
//
// Modes:
//   - Level is what poll(2) does.
//   - Edge is emulated exactly, as mio's poll(2) selector does: once a
//     condition (Readable, Writable, Priority) is reported it is quiet, left
//     out of the descriptor's pollfd events, until Drained (the caller's
//     operation returned EAGAIN) or Modify asks for it again. So an edge is
//     reported once, however long the condition lasts, and a caller who
//     re-arms after EAGAIN loses none.
//   - Hang-ups and errors cannot be left out of a pollfd: poll(2) reports
//     POLLHUP and POLLERR whatever the events ask. Under Edge they are
//     reported once (POLLRDHUP, which can be left out, is no longer asked
//     for once a hang-up is reported); a descriptor whose only readiness is
//     such a lasting condition already reported rests out of the array and
//     is looked at again on a back-off schedule (poll_rest_unix.go).
//   - Oneshot: once reported, the registration is disarmed (left out of the
//     array) until Modify re-arms it.
//
// Invariants (mu guards the table, list, dirty, patch, blocked, rest and
// every pollEntry field):
//   - The pollfd array, pfds, and its twin slots are owned by the goroutine
//     in Select; pfds[0] is the waker, pfds[i] for i >= 1 was built from
//     slots[i].e when its generation was slots[i].gen, and i == e.idx+1 as
//     long as dirty is clear.
//   - Add appends a new entry (generation 0) to the list; Delete takes an
//     entry out of it and Modify changes one, and both bump its generation.
//     All three set dirty, so Select rebuilds the array before it polls
//     again. Drained and the end of a rest change only
//     which conditions an entry asks for: they queue the entry in patch,
//     and Select rewrites its pollfd in place (or rebuilds, if dirty).
//   - A result is reported only if its entry's generation still equals the
//     one the array was built from, checked under mu: an event harvested
//     for a registration that was modified or deleted meanwhile is dropped.
//     It is never lost: a modified registration is polled afresh on the
//     next pass, and a deleted one must not be reported.
//   - blocked is set, under mu, from just before Select polls until it has
//     locked mu again afterwards. Every change made while blocked is set
//     nudges the waker, so the blocked poll returns and Select applies the
//     change and polls again; Select does not return to its caller for a
//     nudge. Delete nudges too: the kernel holds a reference to every file
//     a poll waits on, so a descriptor closed after Delete would otherwise
//     stay open (no FIN for the peer, a listener's port kept) until the
//     poll returned for another reason.
//   - The waker is drained BEFORE the gate is reset, not after. The gate
//     lets one write through per pending period; a write let through after
//     the reset but drained before it was polled would leave the gate
//     pending over an empty waker, and every later Wake would coalesce into
//     that lost write. Drained first, the waker holds exactly the period's
//     one write (which is what made it readable); a Wake between drain and reset finds
//     the gate pending and writes nothing, and is answered by this Select.
//   - wakeCalled tells a caller's Wake from a nudge. Wake sets it before
//     wakeGate.begin; Select, after seeing the waker fire, drains it, resets
//     the gate and then swaps wakeCalled to false. A Wake whose begin found
//     the gate pending (so wrote nothing) set the flag before the reset, so
//     this Select reports woken; one whose begin came after the reset wrote,
//     and the next poll sees it.
//   - closed is set once, by Close, under closeMu held for writing; a waker
//     write holds closeMu for reading and checks closed, so it never lands
//     in a descriptor that reused the waker's number.
type pollSelector struct {
	waker      fdWaker
	gate       wakeGate
	wakeCalled atomic.Bool
	closed     atomic.Bool
	closeMu    sync.RWMutex
	waits      atomic.Uint64

	mu      sync.Mutex
	table   map[int]*pollEntry
	list    []*pollEntry // the table in a stable order; entry.idx is its position
	dirty   bool
	patch   []*pollEntry // entries whose pollfd must be rewritten in place
	blocked bool
	rest    restSchedule

	// Owned by the goroutine in Select.
	pfds  []unix.PollFd
	slots []pollSlot
	start int // rotation: where the next scan for results begins
	probe restProbe
}

// pollEntry is one registration.
type pollEntry struct {
	fd       int
	key      uint64
	interest uint32
	mode     Mode
	armed    bool   // false after a oneshot event or POLLNVAL, until Modify
	quiet    uint32 // emulated edge: conditions reported, not re-armed since
	reported uint32 // emulated edge: the lasting Error|Hup already reported
	resting  bool   // left out of the array; see poll_rest_unix.go
	patched  bool   // queued in pollSelector.patch
	gen      uint64 // bumped by Modify and Delete
	idx      int    // position in list
}

// pollSlot records which registration, at which generation, a pollfd was
// built from.
type pollSlot struct {
	e   *pollEntry
	gen uint64
}

// emulatedEdge reports whether the entry's edges are emulated (Edge without
// Oneshot; an oneshot registration is disarmed after one event instead).
func (e *pollEntry) emulatedEdge() bool { return e.mode&(Edge|Oneshot) == Edge }

// fill writes the entry's pollfd: its descriptor, or -1 while it is
// disarmed or resting, and what it asks for.
func (e *pollEntry) fill(p *unix.PollFd) {
	p.Fd = -1
	if e.armed && !e.resting {
		// A disarmed entry gets a negative descriptor, which poll(2)
		// skips. Events = 0 would not do: POLLHUP, POLLERR and POLLNVAL
		// are reported whatever the events ask for.
		p.Fd = int32(e.fd)
	}
	e.fillEvents(p)
}

// fillEvents writes what e's pollfd asks for: its interest less what is
// quiet. The constants are untyped, so this compiles whatever integer type
// this system's PollFd uses.
func (e *pollEntry) fillEvents(p *unix.PollFd) {
	want := e.interest &^ e.quiet
	p.Events = 0
	if want&Readable != 0 {
		p.Events |= unix.POLLIN
	}
	if e.interest&(Readable|Hup) != 0 && e.reported&Hup == 0 {
		p.Events |= pollRdHup // a peer's half-close is a hang-up to report
	}
	if want&Writable != 0 {
		p.Events |= unix.POLLOUT
	}
	if want&Priority != 0 {
		p.Events |= unix.POLLPRI
	}
	p.Revents = 0
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

func openPoll(Options) (Selector, error) {
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

func (s *pollSelector) Traits() Traits {
	return Traits{RestLatency: restMax + restFirst}
}

func (s *pollSelector) Add(fd int, key uint64, interest uint32, mode Mode) error {
	if s.closed.Load() {
		return ErrClosed
	}
	if err := checkKey(key); err != nil {
		return os.NewSyscallError("poll(add)", err)
	}
	if !fdOpen(fd) {
		return os.NewSyscallError("poll(add)", unix.EBADF)
	}
	s.mu.Lock()
	if _, ok := s.table[fd]; ok {
		s.mu.Unlock()
		return os.NewSyscallError("poll(add)", unix.EEXIST)
	}
	e := &pollEntry{fd: fd, key: key, interest: interest, mode: mode, armed: true, idx: len(s.list)}
	s.table[fd] = e
	s.list = append(s.list, e)
	s.unlockChanged(s.markDirtyLocked())
	return nil
}

func (s *pollSelector) Modify(fd int, key uint64, interest uint32, mode Mode) error {
	if s.closed.Load() {
		return ErrClosed
	}
	if err := checkKey(key); err != nil {
		return os.NewSyscallError("poll(modify)", err)
	}
	if !fdOpen(fd) {
		return os.NewSyscallError("poll(modify)", unix.EBADF)
	}
	s.mu.Lock()
	e, ok := s.table[fd]
	if !ok {
		s.mu.Unlock()
		return os.NewSyscallError("poll(modify)", unix.ENOENT)
	}
	e.key, e.interest, e.mode = key, interest, mode
	e.armed, e.quiet, e.reported = true, 0, 0
	s.unrestLocked(e)
	e.gen++
	s.unlockChanged(s.markDirtyLocked())
	return nil
}

// Delete removes fd's entry. Like epoll_ctl, it answers EBADF for a
// descriptor that is no longer open, after removing its entry if it had
// one.
func (s *pollSelector) Delete(fd int) error {
	if s.closed.Load() {
		return ErrClosed
	}
	s.mu.Lock()
	e, ok := s.table[fd]
	if !ok {
		s.mu.Unlock()
		return missing("poll(delete)", fd)
	}
	delete(s.table, fd)
	last := len(s.list) - 1
	moved := s.list[last]
	s.list[e.idx] = moved
	moved.idx = e.idx
	s.list[last] = nil
	s.list = s.list[:last]
	e.gen++ // results already harvested for it are now stale
	s.unrestLocked(e)
	s.unlockChanged(s.markDirtyLocked())
	if !fdOpen(fd) {
		return os.NewSyscallError("poll(delete)", unix.EBADF)
	}
	return nil
}

// Drained makes the conditions in ready that an emulated edge reported count
// again. It costs a lock and a map lookup, and a rewrite of one pollfd only
// when something was quiet.
func (s *pollSelector) Drained(fd int, ready uint32) error {
	if s.closed.Load() {
		return ErrClosed
	}
	s.mu.Lock()
	e, ok := s.table[fd]
	if !ok {
		s.mu.Unlock()
		return missing("poll(drained)", fd)
	}
	nudge := false
	if bits := e.quiet & ready; bits != 0 {
		e.quiet &^= bits
		s.unrestLocked(e) // what it asks for again may be there already
		nudge = s.patchLocked(e)
	}
	s.unlockChanged(nudge)
	return nil
}

// markDirtyLocked marks the array for rebuilding and reports whether a
// Select is blocked on the old one.
func (s *pollSelector) markDirtyLocked() (blocked bool) {
	s.dirty = true
	return s.blocked
}

// patchLocked queues e's pollfd to be rewritten in place and reports
// whether a Select is blocked on the old one.
func (s *pollSelector) patchLocked(e *pollEntry) (blocked bool) {
	if !e.patched {
		e.patched = true
		s.patch = append(s.patch, e)
	}
	return s.blocked
}

// unlockChanged unlocks mu and, if a Select is blocked on an array that no
// longer says what the table does, nudges it (after unlocking: the nudge
// is a system call).
func (s *pollSelector) unlockChanged(nudge bool) {
	s.mu.Unlock()
	if nudge {
		s.nudge()
	}
}

// nudge wakes a blocked Select without making it report woken. It shares
// the gate with Wake: one pending write serves both.
func (s *pollSelector) nudge() {
	if s.gate.begin() {
		_ = s.writeWaker()
	}
}

// writeWaker performs the write that wakeGate.begin granted.
func (s *pollSelector) writeWaker() error {
	return s.gate.write(&s.closeMu, &s.closed, s.waker.wake)
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

func (s *pollSelector) Counters() Counters {
	return Counters{WakerWrites: s.gate.writes.Load(), Waits: s.waits.Load()}
}

// Close closes the waker; poll(2) holds nothing else in the kernel.
func (s *pollSelector) Close() error {
	s.closeMu.Lock()
	defer s.closeMu.Unlock()
	if s.closed.Swap(true) {
		return nil
	}
	return s.waker.close()
}
