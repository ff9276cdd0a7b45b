//go:build linux

package proptest

import (
	"errors"
	"fmt"

	"pgregory.net/rapid"

	"github.com/unipoll/unipoll/eventloop"
	"github.com/unipoll/unipoll/poll"
)

// The operations of the Loop's state machine on its sources, from
// outside a call: Add, readiness, the action a handler returns, Rearm,
// Disarm, SetMode, Remove, Trigger, and the tokens of removed sources. Each
// updates the model as the Loop's documentation says; Iterate
// (model_loop_iterate.go) checks what the calls make of it.

func (w *loopWorld) Add(t *rapid.T) {
	if len(w.live()) >= loopMaxLive {
		t.Skip("enough sources")
	}
	w.nextID++
	s := &loopSrc{id: w.nextID, label: fmt.Sprintf("r%d", w.nextID)}
	s.opts = rapid.SampledFrom(optsChoices).Draw(t, "opts")
	s.prio = rapid.SampledFrom(loopPrios).Draw(t, "priority")
	s.reg, s.set = poll.NewRegistration()
	if rapid.Bool().Draw(t, "ready before Add") {
		if err := s.set.SetReadiness(poll.Readable); err != nil {
			w.fatalf(t, "SetReadiness: %v", err)
		}
		s.ready = true
	}
	tok, err := w.l.Add(s.reg, poll.Readable, s.opts, &loopHandler{w, s}, eventloop.Priority(s.prio))
	w.logf("Add(%s, %s, priority %d, ready %v) = %#x, %v", s.label, s.opts, s.prio, s.ready, uint64(tok), err)
	if err != nil {
		w.fatalf(t, "Add: %v", err)
	}
	if !eventloop.IsLoopToken(tok) || w.byTok[tok] != nil {
		w.fatalf(t, "Add returned token %#x: not a fresh Loop token", uint64(tok))
	}
	s.tok = tok
	w.byTok[tok] = s
	w.srcs = append(w.srcs, s)
	// Registering a ready source owes a report (rule 5).
	s.pollArmed, s.owed = true, s.ready
}

func (w *loopWorld) Set(t *rapid.T) {
	s := w.pick(t, false)
	err := s.set.SetReadiness(poll.Readable)
	w.logf("SetReadiness(%s) = %v", s.label, err)
	if err != nil {
		w.fatalf(t, "SetReadiness: %v", err)
	}
	s.ready = true
	if s.pollArmed {
		s.owed = true // a new edge (each SetReadiness is one)
	}
}

func (w *loopWorld) Unset(t *rapid.T) {
	s := w.pick(t, false)
	err := s.set.UnsetReadiness(poll.Readable)
	w.logf("UnsetReadiness(%s) = %v", s.label, err)
	if err != nil {
		w.fatalf(t, "UnsetReadiness: %v", err)
	}
	// An edge not yet reported is not reported without its readiness,
	// and readiness only comes back with a new edge.
	s.ready, s.owed = false, false
}

func (w *loopWorld) Action(t *rapid.T) {
	s := w.pick(t, false)
	s.action = rapid.SampledFrom([]eventloop.Action{eventloop.Keep, eventloop.Keep, eventloop.Again, eventloop.Again,
		eventloop.Disarm, eventloop.Remove}).Draw(t, "action")
	w.logf("%s returns %v from now on", s.label, s.action)
}

// reregistered is the model of the Reregister that Rearm makes: armed,
// and owed a report if ready (rule 5).
func (s *loopSrc) reregistered() { s.pollArmed, s.owed = true, s.ready }

func (w *loopWorld) Rearm(t *rapid.T) {
	s := w.pick(t, false)
	err := w.l.Rearm(s.tok)
	w.logf("Rearm(%s) = %v", s.label, err)
	w.noCalls(t, "Rearm")
	if err != nil {
		w.fatalf(t, "Rearm: %v", err)
	}
	s.disarmed = false
	s.reregistered()
}

func (w *loopWorld) Disarm(t *rapid.T) {
	s := w.pick(t, false)
	err := w.l.Disarm(s.tok)
	w.logf("Disarm(%s) = %v", s.label, err)
	w.noCalls(t, "Disarm")
	if err != nil {
		w.fatalf(t, "Disarm: %v", err)
	}
	if !s.disarmed { // disarming a disarmed source does nothing
		s.disarmed = true
		s.pollArmed, s.owed = false, false // reregistered with no interest
	}
}

// SetMode moves a source between Edge and Level (netloop's relay does,
// while it reads). It reregisters an armed source, which owes a report if
// ready (rule 5), as Rearm's does; a disarmed one keeps its registration
// off, and Rearm registers the new mode. Oneshot, to or from, is refused
// and changes nothing.
func (w *loopWorld) SetMode(t *rapid.T) {
	s := w.pick(t, false)
	opts := rapid.SampledFrom(optsChoices).Draw(t, "mode")
	err := w.l.SetMode(s.tok, poll.Readable, opts)
	w.logf("SetMode(%s, %s -> %s) = %v", s.label, s.opts, opts, err)
	w.noCalls(t, "SetMode")
	if (opts|s.opts)&poll.Oneshot != 0 {
		if !errors.Is(err, eventloop.ErrInvalidArgument) {
			w.fatalf(t, "SetMode(%s, %s -> %s): %v, want ErrInvalidArgument", s.label, s.opts, opts, err)
		}
		return
	}
	if err != nil {
		w.fatalf(t, "SetMode: %v", err)
	}
	s.opts = opts
	if !s.disarmed {
		s.reregistered()
	}
}

func (w *loopWorld) Remove(t *rapid.T) {
	s := w.pick(t, false)
	err := w.l.Remove(s.tok)
	w.logf("Remove(%s) = %v", s.label, err)
	if err != nil {
		w.fatalf(t, "Remove: %v", err)
	}
	// No Run is active: Removed has run before Remove returned.
	if len(w.calls) != 1 || !w.calls[0].removed || w.calls[0].s != s {
		w.fatalf(t, "Remove(%s) made calls %v, want its Removed alone", s.label, w.calls)
	}
	w.calls = w.calls[:0]
	s.removed = true
	s.pend = pendNone // its queued item, if any, is of a past generation now
	_ = s.reg.Close()
}

func (w *loopWorld) Trigger(t *rapid.T) {
	s := w.pick(t, false)
	err := w.l.Trigger(s.tok)
	w.logf("Trigger(%s) = %v", s.label, err)
	w.noCalls(t, "Trigger")
	if err != nil {
		w.fatalf(t, "Trigger: %v", err)
	}
	s.triggered = true
}

// Stale uses the token of a removed source, whose entry a later source may
// have taken: every operation refuses it and changes nothing.
func (w *loopWorld) Stale(t *rapid.T) {
	s := w.pick(t, true)
	op := rapid.SampledFrom([]string{"Rearm", "Disarm", "Remove", "Trigger"}).Draw(t, "operation")
	var err error
	switch op {
	case "Rearm":
		err = w.l.Rearm(s.tok)
	case "Disarm":
		err = w.l.Disarm(s.tok)
	case "Remove":
		err = w.l.Remove(s.tok)
	case "Trigger":
		err = w.l.Trigger(s.tok)
	}
	w.logf("%s(%s, removed) = %v", op, s.label, err)
	w.noCalls(t, op)
	if !errors.Is(err, eventloop.ErrUnknownToken) {
		w.fatalf(t, "%s with the token of removed %s: %v, want ErrUnknownToken", op, s.label, err)
	}
}

func (w *loopWorld) noCalls(t *rapid.T, op string) {
	if len(w.calls) > 0 {
		w.fatalf(t, "%s made handler calls: %v", op, w.calls)
	}
}
