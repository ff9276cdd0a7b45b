//go:build linux

package sys

import "time"

// The end of a stream on the io_uring backend (completion mode): Delete,
// Close, and the goroutines other than Select that read the CQ to get
// there (a Delete reaping, a Read's or Write's look). See
// uring_stream_sel_linux.go for the rest of the selector's side.
//
// Delete and the CQ. Bytes a receive took from the socket may wait in the
// CQ after the receive is cancelled. Were Delete to return then, a caller
// reading the descriptor itself would get later bytes before them. So
// Delete cancels the receive and returns only once its last completion
// has been harvested: by the Select running at the time (it is woken by
// that completion; Delete waits on cond), or, when no Select runs, by
// Delete itself, which takes the Select's place (selecting) for that
// long and keeps the events it harvests for the next Select (stash).
//
// Invariants (all under mu):
//   - selecting is true while a goroutine reads the CQ (a Select, or a
//     Delete or Close reaping); a Select that finds it set waits on cond.
//   - stash holds events harvested outside a Select; the next Select
//     returns them first.

// streamDeleteLocked is Delete for a stream's entry: it cancels the
// receive and waits until its last completion is harvested ("Delete and
// the CQ").
func (s *uringSelector) streamDeleteLocked(fd int, e *uringEntry) error {
	st := e.st
	delete(s.table, fd)
	e.due, st.entry, st.deleted = 0, nil, true
	st.mu.Lock()
	st.txOver = true
	st.mu.Unlock()
	if st.rx {
		if err := s.cancelLocked(st.userData(false)); err != nil {
			return err
		}
	}
	if err := s.submitLocked(); err != nil { // the cancel, and sends queued
		return err
	}
	// Wait for the receive's end (order), and give the sends the time to
	// go that the kernel lets them have now: as write(2) before close(2)
	// would have put them in the socket. A send that makes no progress in
	// two looks (the peer does not read) goes on in the background, the
	// slot keeping the socket open, as the kernel keeps sending a closed
	// socket's buffer.
	unsent, stalls := -1, 0
	s.reapLocked(func() bool {
		if st.rx {
			return false
		}
		if !st.tx {
			return true
		}
		st.mu.Lock()
		n := len(st.out) + len(st.flight)
		st.mu.Unlock()
		if n == unsent {
			stalls++
		}
		unsent = n
		return stalls >= 2
	}, time.Second, true)
	if !st.rx {
		st.mu.Lock()
		st.rxOver = true
		st.mu.Unlock()
	}
	s.finishIfDoneLocked(st)
	return nil
}

// reapLocked waits, up to limit, until done reports true: for the Select
// running to harvest what it waits for, or harvesting itself when none
// runs (the events go to stash). Called and returns with mu held.
func (s *uringSelector) reapLocked(done func() bool, limit time.Duration, mayNudge bool) {
	end := time.Now().Add(limit)
	for !done() && time.Now().Before(end) {
		if s.selecting {
			if !mayNudge {
				return // Close: the running Select will see ErrClosed
			}
			// The Select may be blocked with nothing to harvest: a nudge
			// makes it harvest (the waker's completion), and every
			// harvest broadcasts. harvests tells whether one came while
			// mu was released for the nudge (the nudge takes closeMu,
			// which Close takes before mu).
			h := s.harvests
			s.mu.Unlock()
			s.nudge()
			s.mu.Lock()
			if s.harvests == h && s.selecting {
				s.cond.Wait()
			}
			continue
		}
		s.selecting = true
		s.mu.Unlock()
		s.beginSelect()
		_ = s.enterWait(1, time.Millisecond)
		n, woken, _, _ := s.harvest(s.reapBuf[:])
		s.mu.Lock()
		s.stashLocked(s.reapBuf[:n], woken)
		s.selecting = false
		s.cond.Broadcast()
	}
}

// The look may run on any goroutine: a TLS handshake's goroutine, say,
// whose flight must leave while the Loop is busy. What it submits
// completes on its thread ("Threads" in uringSelector), at once when the
// send has room, else when that thread next enters the kernel or, asleep,
// is woken for it.
//
// look is a Read's or Write's look at the ring when its Stream had
// nothing to give or no room: unless a Select (or another look) reads the
// CQ, it submits what is queued, lets the kernel post what is due (on the
// polling thread, the receives' and sends' completion work runs then), and
// harvests, keeping the events for the next Select (stash). It is what a
// read(2) that finds the socket empty costs on another backend, one
// system call, and it lets a caller that reads or writes in a loop
// without polling in between (which the contract allows) make progress.
func (s *uringSelector) look() {
	s.mu.Lock()
	if s.selecting || s.closed.Load() {
		s.mu.Unlock()
		return
	}
	s.selecting = true
	if len(s.unarmed) > 0 {
		s.armUnarmedLocked() // a caller that only reads and writes (S3)
	}
	s.mu.Unlock()
	s.beginSelect()
	_ = s.enterWait(0, 0)
	n, woken, _, _ := s.harvest(s.reapBuf[:])
	s.mu.Lock()
	s.stashLocked(s.reapBuf[:n], woken)
	s.selecting = false
	s.cond.Broadcast()
	s.mu.Unlock()
}

// stashLocked keeps events harvested outside a Select for the next one.
// An event for a key already kept adds its bits to the kept one, so that
// the stash holds at most one event per registration however often a
// caller that does not poll looks.
func (s *uringSelector) stashLocked(evs []Event, woken bool) {
	s.stashWoken = s.stashWoken || woken
	for _, ev := range evs {
		if i, ok := s.stashAt[ev.Key]; ok {
			s.stash[i].Ready |= ev.Ready
			continue
		}
		if s.stashAt == nil {
			s.stashAt = make(map[uint64]int)
		}
		s.stashAt[ev.Key] = len(s.stash)
		s.stash = append(s.stash, ev)
	}
}

// finishIfDoneLocked forgets a deleted Stream once no request of it is
// in the kernel, and clears its slot (S5).
func (s *uringSelector) finishIfDoneLocked(st *uringStream) {
	if !st.deleted || st.rx || st.tx || st.roomArmed || st.slotd {
		return
	}
	delete(s.streams, st.id)
	_ = s.submitLocked() // a queued shutdown names the slot: it goes first
	s.files.clear(s.ring.fd, st.slot)
	st.slotd = true
}

// closeStreamsLocked is Close's part for the streams: it cancels their
// requests, reaps them (bounded: a Select may be running), copies what
// they received out of the buffers, and unmaps the buffers only if no
// request of a Stream is left in the kernel; otherwise the mappings stay,
// since the kernel could still write into them.
func (s *uringSelector) closeStreamsLocked() {
	if s.bufs == nil {
		return
	}
	for _, st := range s.streams {
		if st.rx {
			_ = s.cancelLocked(st.userData(false))
		}
		if st.tx {
			_ = s.cancelLocked(st.userData(true))
		}
		if st.roomArmed {
			_ = s.cancelLocked(st.roomData())
		}
	}
	_ = s.submitLocked()
	busy := func() bool {
		for _, st := range s.streams {
			if st.rx || st.tx || st.roomArmed {
				return false
			}
		}
		return true
	}
	s.reapLocked(busy, 200*time.Millisecond, false)
	idle := busy()
	for _, st := range s.streams {
		st.mu.Lock()
		st.spillLocked()
		st.closedSel, st.rxOver = true, true
		if !st.tx {
			st.txOver = true
		}
		st.mu.Unlock()

	}
	if idle {
		s.bufs.close(s.ring.fd)
	}
}
