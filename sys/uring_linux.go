//go:build linux

package sys

import (
	"errors"
	"fmt"
	"os"
	"runtime"
	"sync"
	"sync/atomic"

	"golang.org/x/sys/unix"
)

func init() {
	backends[BackendUring] = openUring
	backendUsable[BackendUring] = uringUsable
}

// Ring sizes. Submissions are flushed whenever the SQ fills, so its size
// only bounds a batch. The CQ is larger: every edge-triggered registration
// may post a completion per wake-up between two Selects, and a multishot
// poll that finds the CQ full ends (uringSelector, "Multishot ends").
const (
	uringSQEntries = 256
	uringCQEntries = 4096
	// In completion mode (Options.Completion).
	uringStreamSQEntries = 2048
	uringStreamCQEntries = 32768
)

// uringSelector is the io_uring backend: each registration is a poll
// request (IORING_OP_POLL_ADD) in the ring, its completions the events.
// The ring's layout and who writes what in it are in uring_ring_linux.go.
//
// Modes. A POLL_ADD completes once, with the mask it found, unless it is
// multishot (IORING_POLL_ADD_MULTI), which posts a completion on every
// wake-up of the file that matches its events and stays armed. Both are
// triggered by wake-ups (the kernel sets EPOLLET on them), and both
// complete at once if the file is ready when they are armed. A completion
// caused by a wake-up carries only what that wake-up announced (a read
// wake-up says POLLIN, not that the socket is also writable), unlike
// epoll, which looks at the whole state when it reports. So:
//   - Edge is emulated (Traits.NativeEdge is false), exactly as on the
//     poll(2) backend: a reported condition is quiet until Drained (the
//     caller's EAGAIN) or Modify, and an event may leave out a quiet
//     condition, which the contract allows an emulated edge. The request
//     is multishot: what the kernel announces for a quiet condition is
//     held, not reported, and Drained makes held conditions that are still
//     there due (reported by the next Select). A request submitted again (see "Multishot
//     ends") asks only for what is not quiet; Drained of a condition it does
//     not ask for replaces it, and its first look reports what is there.
//     A lasting hang-up or error is reported once (it makes no new
//     wake-up), so nothing rests (Traits.RestLatency is 0).
//   - Level is a single-shot poll, submitted again after each completion
//     (batched, with the next Select's io_uring_enter): armed afresh on a
//     ready file it completes during that very enter, so a ready
//     descriptor is reported on every Select.
//   - Oneshot (with Edge or Level) is a single-shot poll that is not
//     submitted again until Modify.
//
// Keys. The kernel hands back the user_data of the request; it is the
// descriptor (low 32 bits) and the registration's generation (the next 30:
// bits 62 and 63 are clear), never the caller's key, which stays in the
// table. Add
// and Modify take a new generation from a counter, so a completion of a
// request that Modify replaced or Delete removed is recognised as stale and
// dropped, as the poll(2) backend does. A POLL_REMOVE of a registration's
// request carries that request's user_data with bit 62 set: the kernel
// answers -EALREADY when the request is busy completing, and then it stays
// armed (holding its file, so a descriptor closed after Delete would stay
// open), so Select removes it again. Our other requests carry
// uringTagIgnore (the waker's removal at Close) or uringTagWaker; both
// have bit 63 set.
//
// Submissions. Add, Modify and the Level re-arms only queue their SQEs:
// the next Select submits them with the io_uring_enter it waits with. A
// change made while a Select is blocked (blocked, under mu) nudges it, so
// that it submits the change from its own thread (unlockNudging says why)
// and waits again. Delete always submits at once: a poll request holds a
// reference to its file, and a descriptor closed after Delete must really
// close (the peer sees the hang-up) without waiting for the next Select.
// The same reference means a descriptor closed while still registered
// stays open in the kernel until Delete or Close; the contract asks for
// Delete first anyway.
//
// Threads. The kernel does a poll request's completion work (posting its
// CQE; for a removed request, dropping its reference to the file) on the
// thread that submitted it, when that thread next enters the kernel, or
// at once if it sleeps (it is woken for it; a running one is not
// interrupted, IORING_SETUP_COOP_TASKRUN in setupUring). Until then the CQ does not show the
// event, and a descriptor closed after Delete is not released (its peer
// sees no FIN). Go moves goroutines between threads, so requests submitted
// by one Select would complete on a thread that is by then asleep, or
// running something else, or waiting for a CPU: a look right after an
// event missed it, and a close right after Delete sent no FIN, for as long
// as the scheduler took. So the first Select locks its goroutine to its
// thread (runtime.LockOSThread, never undone: the goroutine that polls is
// normally the one that keeps polling), and Select submits what others
// queue (see Submissions): a request's completion then runs on the
// polling thread itself, at the latest in its next io_uring_enter, as
// epoll's ready list is there at once. Should that goroutine end, its
// thread ends with it and the kernel cancels its requests; Select submits
// them again (see Multishot ends) from the goroutine that polls then,
// which is not locked again.
//
// Unasked conditions. The kernel reports POLLRDHUP (and POLLERR, POLLHUP)
// whatever a request asks for; a half-close is reported only to an
// interest with Readable or Hup, as epoll does (uringReady). A single-shot
// request armed on a file with such a lasting condition ends at once, and
// armed again by every Select it would end at once again, so a blocking
// Select would spin. A Level or Oneshot request that ends with nothing to
// report is therefore replaced by a multishot one (multi), which reports
// only the wake-ups after it; at its first event the entry goes back to
// single-shot requests (Level) or to none (Oneshot).
//
// Multishot ends. The kernel ends a multishot poll (a completion without
// IORING_CQE_F_MORE) when it cannot post a completion (the CQ is full), or
// with -ECANCELED when the thread that submitted it exits (io_uring runs a
// request's completion work on its submitting thread, and Go threads
// locked with runtime.LockOSThread exit with their goroutine). Select
// submits such a request again, at the registration's current generation,
// unless it was oneshot; a completion that ended with a mask is reported
// too. Re-armed on a condition that lasts, the poll reports it once more:
// the only way this backend reports an edge twice.
//
// Invariants (mu guards table, nextGen, blocked, every uringEntry and all
// SQ writes):
//   - An entry is armed while a request of its current generation is in
//     the kernel or queued for it. Modify and Delete of an armed entry
//     queue a POLL_REMOVE of the old user_data (whose completions are then
//     stale); its own answer (0, or -ENOENT if the request had completed) is
//     ignored.
//   - An entry's due is 0 once it has left table: both Deletes clear it
//     as they remove the entry, and nothing sets it on an entry that is
//     not in table. Drained, Modify and flushResubmits find entries
//     through table; AddStream announces its entry once it is in table;
//     a stream's completions announce it through st.entry, which its
//     Delete clears. So an entry of the due list whose due is not 0 is
//     still registered, and dueLocked needs no look in table for it. (An
//     entry may be listed twice: Modify clears due, and a stream's
//     Modify announces it again; the first report clears due, and the
//     second is skipped.)
//   - The waker is an eventfd with a multishot poll of its own: Wake's
//     write is a wake-up, so a completion, and the eventfd is never drained
//     (the epoll backend's edge waker, wakeEdge). A change queued while
//     a Select is blocked nudges it (Add, Modify, a Drained that makes a
//     held condition due or replaces a request); the Select marks itself
//     blocked only when nothing is due (blockUnlessDue), so a Drained
//     between its last look and its wait is not left for the timeout. A
//     stream's receive that the full SQ refused nudges a Select that is
//     running at all (S3), since it is in no SQ the wait would submit.
//     wakeCalled tells a Wake from a nudge, as on the poll(2) backend:
//     Wake sets it before wakeGate.begin; Select, when it sees the
//     waker's completion, resets the gate and then swaps the flag to
//     false.
//   - closed is set once, by Close, with both closeMu (held for writing:
//     Wake's eventfd write holds it for reading) and mu (the registration
//     calls check closed under it) held, so no system call reaches a
//     descriptor or a mapping that Close released.
type uringSelector struct {
	ring    *uringRing
	owner   *uringOwner
	waker   *eventfdWaker
	gate    wakeGate
	waits   atomic.Uint64
	closed  atomic.Bool
	closeMu sync.RWMutex

	wakeCalled atomic.Bool

	mu        sync.Mutex
	table     map[int]*uringEntry
	resubmits []uringResubmit // requests over, to be submitted again by Select
	due       []uringResubmit // emulated edges made due again by Drained
	nextGen   uint32
	blocked   bool
	nudgeDue  bool   // a change queued while blocked: unlockNudging nudges
	epoch     uint64 // harvests so far; see uringEntry.epoch

	// Completion mode (uring_stream_sel_linux.go).
	completion bool
	bufs       *uringBufs
	files      *uringFiles
	bufCount   int      // buffers in bufs; 0: uringBufCount (tests make it small)
	noStreams  bool     // the kernel lacks what streams need: AddStream is Add
	recvCap    uringCap // whether the kernel caps a multishot receive's bytes (S7)
	// testRefuseCap: tests make the kernel refuse capped receives, as
	// one before 6.17 does.
	testRefuseCap bool
	// testArmFail: tests make a receive's arm fail, as a full SQ that
	// the kernel does not take (EBUSY) does, whenever it says so.
	testArmFail func() bool
	// testBeforeWait: tests act where a Select has made its last flush
	// and is about to wait.
	testBeforeWait func()
	// testCancelsAll: tests learn that Close cancels requests in the ring.
	testCancelsAll func()
	streams        map[uint32]*uringStream
	nextStream     uint32
	starved        []*uringStream
	starvedN       atomic.Int32
	unarmed        []*uringStream // receives the SQ had no room for (S3): flushResubmits arms them
	ranDry         int            // receives ended by ENOBUFS, for the tests
	streamDue      bool           // an announcement this harvest: report due again
	selecting      bool
	harvests       uint64    // harvests so far, each broadcast on cond
	cond           sync.Cond // on mu: selecting went false, or a receive ended
	stash          []Event
	stashAt        map[uint64]int // key -> index in stash
	stashWoken     bool
	reapBuf        [64]Event

	// Owned by the goroutine in Select; in the heap, so the kernel may be
	// given their addresses (the collector never moves a heap object).
	arg uringGeteventsArg
	ts  unix.Timespec
	// pinned: a Select has locked its goroutine to its thread ("Threads").
	// Owned by the goroutine in Select, as are begun and fresh
	// (uring_fresh_linux.go).
	pinned bool
	begun  uint32
	fresh  []unix.PollFd
}

// uringEntry is one registration.
type uringEntry struct {
	key      uint64
	interest uint32
	mode     Mode
	gen      uint32
	armed    bool
	mask     uint32 // the interest the request in the kernel asks for
	resubmit bool   // queued in uringSelector.resubmits
	epoch    uint64 // the harvest that last reported it, at events[slot]
	slot     int
	// Emulated edge (Edge without Oneshot), as the poll(2) backend has it.
	quiet    uint32 // conditions reported, not drained since (Drained)
	reported uint32 // the lasting Error|Hup already reported
	held     uint32 // quiet conditions the kernel announced again meanwhile
	due      uint32 // held conditions that Drained made due: in uringSelector.due
	multi    bool   // Level or Oneshot on a multishot request ("Unasked conditions")
	// A look at the file in this harvest (uring_fresh_linux.go).
	freshEpoch uint64
	freshAt    int
	// A stream's entry (completion mode): st is its Stream, fired says a
	// Oneshot one has reported.
	st    *uringStream
	fired bool
}

// emulatedEdge reports whether the entry's edges are emulated (Edge
// without Oneshot; an oneshot registration is disarmed after one event
// instead).
func (e *uringEntry) emulatedEdge() bool { return e.mode&(Edge|Oneshot) == Edge }

// uringResubmit is a registration whose request is over and that Select
// submits again (a Level re-arm, or a multishot poll that ended), or whose
// held conditions Drained made due.
type uringResubmit struct {
	fd int
	e  *uringEntry
}

// Internal user_data tags; bit 63 is never set in a registration's.
const (
	uringTagWaker  = 1<<63 | 1
	uringTagIgnore = 1<<63 | 2
	// uringRemoveBit marks the completion of a POLL_REMOVE of a
	// registration's request (uringRemoval); bit 62 is never set in a
	// registration's user_data either.
	uringRemoveBit = 1 << 62
)

// uringUserData is a registration's user_data; gen has 30 bits.
func uringUserData(fd int, gen uint32) uint64 { return uint64(gen)<<32 | uint64(uint32(fd)) }

// ErrBackendUnavailable's io_uring cases. ENOSYS: a kernel without it.
// EPERM: kernel.io_uring_disabled = 2, or 1 for a process outside
// kernel.io_uring_group, or a seccomp filter (Docker's default profile
// refuses it so). EACCES, EINVAL and ENOMEM come from older or restricted
// setups too; anything else is a real error.
func uringRefused(err error) bool {
	var errno unix.Errno
	if !errors.As(err, &errno) {
		return true // a kernel without the features we need
	}
	switch errno {
	case unix.ENOSYS, unix.EPERM, unix.EACCES, unix.EINVAL, unix.ENOMEM:
		return true
	}
	return false
}

var uringProbe struct {
	once sync.Once
	err  error
}

// uringUsable reports whether this kernel lets the process open a ring
// with the features the selector needs. It is probed once, on a thread of
// its own that exits afterwards: closing a ring interrupts (once, as a
// signal without a handler would, so a blocked epoll_wait returns EINTR)
// every thread that created or submitted to it, and the probe must not
// disturb a thread that goes on to wait in another selector.
func uringUsable() bool {
	uringProbe.once.Do(func() {
		done := make(chan error)
		go func() {
			runtime.LockOSThread() // never unlocked: the thread exits with us
			r, err := setupUring(4, 8)
			if err == nil {
				err = r.close()
			}
			done <- err
		}()
		uringProbe.err = <-done
	})
	return uringProbe.err == nil
}

func openUring(o Options) (Selector, error) {
	sq, cq := uint32(uringSQEntries), uint32(uringCQEntries)
	if o.Completion {
		// A completion per message received and per send: thousands of
		// connections post that many between two Selects.
		sq, cq = uringStreamSQEntries, uringStreamCQEntries
	}
	sel, err := openUringSized(sq, cq)
	if err == nil {
		sel.(*uringSelector).completion = o.Completion
	}
	return sel, err
}

// openUringSized opens a uring selector with rings of the given sizes (the
// tests use small ones to make the CQ overflow).
func openUringSized(sq, cq uint32) (Selector, error) {
	r, owner, err := setupOwnedUring(sq, cq)
	if err != nil {
		if uringRefused(err) {
			return nil, fmt.Errorf("%w: io_uring: %w", ErrBackendUnavailable, err)
		}
		return nil, os.NewSyscallError("io_uring_setup", err)
	}
	w, err := newEventfdWaker()
	if err != nil {
		_ = owner.closeRing(r)
		return nil, err
	}
	s := &uringSelector{ring: r, owner: owner, waker: w, table: make(map[int]*uringEntry),
		streams: make(map[uint32]*uringStream)}
	s.cond.L = &s.mu
	// The waker's poll is only queued: the first Select submits it, from
	// the polling thread ("Threads").
	s.mu.Lock()
	err = s.queueLocked(uringSQE{opcode: uringOpPollAdd, fd: int32(w.fd()),
		opFlags: uringPollEvents(Readable), len: uringPollAddMulti, userData: uringTagWaker})
	s.mu.Unlock()
	if err != nil {
		_ = errors.Join(owner.closeRing(r), w.close())
		return nil, err
	}
	return s, nil
}

func (s *uringSelector) Name() string { return BackendUring }

func (s *uringSelector) Traits() Traits { return Traits{} }

func (s *uringSelector) Counters() Counters {
	return Counters{WakerWrites: s.gate.writes.Load(), Waits: s.waits.Load()}
}

// Wake writes the eventfd, whose multishot poll completes on every write.
func (s *uringSelector) Wake() error {
	if s.closed.Load() {
		return nil
	}
	s.wakeCalled.Store(true)
	if !s.gate.begin() {
		return nil
	}
	return s.writeWaker()
}

// nudge wakes a blocked Select without making it report woken (Drained made
// a held condition due). It shares the gate with Wake.
func (s *uringSelector) nudge() {
	if s.gate.begin() {
		_ = s.writeWaker()
	}
}

// writeWaker performs the write that wakeGate.begin granted.
func (s *uringSelector) writeWaker() error {
	return s.gate.write(&s.closeMu, &s.closed, s.waker.wakeEdge)
}

// Close closes the ring, which cancels every request in it, and the waker.
// It returns once the kernel has interrupted the threads that used the
// ring (uring_owner_linux.go).
func (s *uringSelector) Close() error {
	s.closeMu.Lock()
	defer s.closeMu.Unlock()
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed.Swap(true) {
		return nil
	}
	s.closeStreamsLocked()
	s.cancelAllLocked()
	return errors.Join(s.owner.closeRing(s.ring), s.waker.close())
}

// cancelAllLocked removes every request before the ring is closed. A ring
// that never submitted anything has none, and then Close submits nothing
// either (what is queued goes with the ring): requests armed only to be
// cancelled make the kernel's teardown take about 50 ms instead of 20 on
// Linux 6.18 (uring_owner_linux.go).
func (s *uringSelector) cancelAllLocked() {
	if atomic.LoadUint32(s.ring.sqHead) == 0 {
		return
	}
	if s.testCancelsAll != nil {
		s.testCancelsAll()
	}
	for fd, e := range s.table {
		if e.st == nil && s.roomLocked(1) == nil {
			s.disarmLocked(fd, e)
		}
	}
	if s.roomLocked(1) == nil {
		s.ring.push(uringSQE{opcode: uringOpPollRemove, fd: -1, addr: uringTagWaker, userData: uringTagIgnore})
	}
	_ = s.submitLocked()
}
