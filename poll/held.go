package poll

// The consumer's held list: Registrations that are linked (their state has
// stQueued set) but sit in a ring owned by the consumer instead of in the
// readiness queue. Every node the readiness queue hands over goes here, and
// a node the consumer has just reported stays here for a few more Poll
// calls, still marked queued. A producer that makes a held node ready again
// sees queued set and only sets stOwed in the state word: no exchange on
// the queue's head, no link store into another node, and no wake-up, which
// are the costly, cache-line-bouncing part of a push. The consumer goes
// round the held list in FIFO order, so nothing set on a held node is
// missed. Before it blocks it releases every held node that has nothing to
// report (clears queued), so that a later SetReadiness links the node and
// wakes it again, and it does not block if one has something (invariant 4
// in readiness_queue.go, with the others). The gain is for a consumer that keeps
// busy: one that blocks between events releases everything each time, and
// producers push as before.

// heldIdleScans is how many passes of the consumer in a row (Poll calls,
// unless a call has to retry) a held node may be found with nothing to
// report before the consumer releases it. A node in steady use is set
// again within a few passes and so never pays a push; an idle one costs the
// consumer this many looks at its state word before it leaves. (Measured:
// 1 to 16 make no difference to BenchmarkNotifyThroughput, where every
// node is set again before the next pass.)
const heldIdleScans = 8

// heldKeep is the largest ring kept while it is empty: a burst that once
// held many nodes does not pin its memory for the Poll's lifetime. (A Poll
// that never blocks never trims; its ring stays the size of its largest
// burst of linked Registrations.)
const heldKeep = 1024

// popHeld takes the oldest held node; the caller knows there is one.
func (p *Poll) popHeld() *regNode {
	n, ok := p.held.Pop()
	if debugChecks && !ok {
		corrupted("pop from an empty held ring")
	}
	return n
}

// visit looks at a held node in this pass of the consumer: it reports it
// when it is deliverable, and otherwise counts an idle look, releasing it
// after heldIdleScans of them. It returns whether the node stays held.
func (p *Poll) visit(n *regNode, ev *Events) (keep bool) {
	if n.epoch == p.epoch {
		// Reported in this pass already (at most one event per token per
		// call, see invariant 4): looked at again in the next one.
		return true
	}
	for {
		old := n.state.Load()
		if debugChecks {
			checkHeld(old)
		}
		if old&(stDropped|stRegistered) != stRegistered {
			// Closed or deregistered: unlinked and forgotten (invariant 5).
			if n.state.CompareAndSwap(old, old&^(stQueued|stLinked|stOwed)) {
				return false
			}
			continue
		}
		if !stDeliverable(old) {
			if n.looked != p.epoch { // one idle look per pass, however many drains
				n.looked = p.epoch
				n.idle++
			}
			if n.idle < heldIdleScans {
				return true
			}
			if n.state.CompareAndSwap(old, old&^(stQueued|stLinked|stOwed)) {
				return false
			}
			continue
		}
		ready := stPending(old)
		opts := stOpts(old)
		slot := stTokWrite(old)
		s := old&^(stTokMask<<stTokReadShift|stOwed) | slot<<stTokReadShift
		oneshot := opts.IsOneshot()
		if oneshot {
			s = stWithInterest(s, 0, opts) &^ (stQueued | stLinked)
		}
		if !n.state.CompareAndSwap(old, s) {
			continue
		}
		if debugChecks && n.epoch == p.epoch {
			corrupted("node reported twice in one pass (invariant 4)")
		}
		n.epoch = p.epoch
		n.idle = 0
		ev.push(Token(n.tokens[slot].Load()), ready)
		p.spinNext = true
		return !oneshot
	}
}

// releaseHeld is called before the consumer may block: it releases every
// held node that has nothing to report, so that producers link it and wake
// the consumer again. It returns whether a held node is deliverable, in
// which case the consumer must not block (the node is reported by the
// drain that follows the select).
func (p *Poll) releaseHeld() (ready bool) {
	for k := p.held.Len(); k > 0; k-- {
		n := p.popHeld()
		for {
			old := n.state.Load()
			if debugChecks {
				checkHeld(old)
			}
			if stDeliverable(old) {
				p.held.Push(n)
				ready = true
				break
			}
			if n.state.CompareAndSwap(old, old&^(stQueued|stLinked|stOwed)) {
				n.idle = 0
				break
			}
		}
	}
	p.held.Trim(heldKeep)
	return ready
}
