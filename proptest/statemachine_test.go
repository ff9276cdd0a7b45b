//go:build linux

package proptest

import (
	"fmt"
	"testing"
	"time"

	"pgregory.net/rapid"

	"github.com/unipoll/unipoll/poll"
)

// TestStateMachine drives one Poll with random sequences of operations on
// sockets, pipes and Registrations, and checks every Poll result against
// the model (model.go). One subtest per backend.
func TestStateMachine(t *testing.T) {
	forBackends(t, func(t *testing.T, b string) {
		checkScaled(t, stateMachineChecks, stateMachine(backendOf(b)))
	})
}

// TestPeerLifecycle: one or two registered sockets (drawn interest and
// mode) go through their peers' whole life (writes both ways, half-closes,
// close with data unread) with only non-blocking or short Polls and
// Reregisters in between: lasting conditions (hang-ups, errors) that arrive
// one after the other, on descriptors that are parked or resting because
// what was there before was outside the interest or already reported.
// A blocking Poll is left out on purpose: it would give the backend the
// time to look again that a busy caller never gives it.
func TestPeerLifecycle(t *testing.T) {
	forBackends(t, func(t *testing.T, b string) {
		checkScaled(t, stateMachineChecks, peerLifecycle(backendOf(b)))
	})
}

func peerLifecycle(be backend) func(*rapid.T) {
	return func(t *rapid.T) {
		w := newWorld(t, be, poll.Config{})
		w.kinds = []kind{sockKind{}}
		defer w.cleanup()
		for i, n := 0, rapid.IntRange(1, 2).Draw(t, "sockets"); i < n; i++ {
			s := w.open(t, sockKind{})
			w.logf("open %s: %v", s.label, s.impl)
			tok := w.drawToken(t, "token")
			interest, opts := drawInterest(t), drawOpts(t)
			if rapid.Bool().Draw(t, "lasting conditions only") {
				interest &= poll.Error | poll.Hup | poll.Priority
				if interest == 0 { // an empty interest is refused
					interest = poll.Hup
				}
			}
			err := w.p.Register(s.impl.evented(), tok, interest, opts)
			w.logf("Register(%s, token %d, %s, %s) = %v", s.label, tok, interest, opts, err)
			w.expectErr(t, "Register", err, nil)
			w.arm(s, tok, interest, opts)
		}
		peerOps := []op{}
		for _, o := range (sockKind{}).ops() {
			if o.name != "close" {
				peerOps = append(peerOps, o)
			}
		}
		names := make([]string, len(peerOps))
		for i, o := range peerOps {
			names[i] = o.name
		}
		t.Repeat(map[string]func(*rapid.T){
			"": w.Check,
			"socket": func(t *rapid.T) {
				s := w.pick(t, nil, "socket")
				i := rapid.IntRange(0, len(peerOps)-1).Draw(t, fmt.Sprintf("op (index in %v)", names))
				peerOps[i].run(t, w, s)
			},
			"Poll":        w.Poll,
			"PollTimeout": w.PollTimeout,
			"Reregister":  w.Reregister,
		})
		w.settle(t)
		w.shutdown(t)
	}
}

// stateMachine is the property behind TestStateMachine and
// FuzzStateMachine: every kind of source.
func stateMachine(be backend) func(*rapid.T) { return stateMachineOf(be, kinds) }

// stateMachineOf is the state machine restricted to some kinds of source.
func stateMachineOf(be backend, ks []kind) func(*rapid.T) { return stateMachineWeighted(be, ks, 0) }

// stateMachineWeighted is stateMachineOf with each kind's operations drawn
// 1+extra times as often as any other step: a kind whose interesting
// states (a full channel with Sends blocked, expired timeouts piling up)
// take several of its operations in a row to reach.
func stateMachineWeighted(be backend, ks []kind, extra int) func(*rapid.T) {
	return func(t *rapid.T) {
		cfg := poll.Config{
			WheelTick:  rapid.SampledFrom([]time.Duration{time.Millisecond, 2 * time.Millisecond}).Draw(t, "wheel tick"),
			WheelSlots: rapid.SampledFrom(wheelSlotChoices).Draw(t, "wheel slots"),
			SpinWait:   rapid.SampledFrom(spinChoices).Draw(t, "spin wait (0 default, -1 none)"),
		}
		w := newWorld(t, be, cfg)
		w.kinds = ks
		defer w.cleanup()
		a := w.actions()
		for _, k := range ks {
			for i := 1; i <= extra; i++ {
				a[fmt.Sprintf("%s (again %d)", k.name(), i)] = a[k.name()]
			}
		}
		t.Repeat(a)
		w.settle(t)
		w.shutdown(t)
	}
}

// stateMachineChecks multiplies rapid's checks for TestStateMachine: a case
// costs a few milliseconds, and some injected bugs needed 30-70 cases to
// show.
const stateMachineChecks = 4

// wheelSlotChoices are the slots per level of the timing wheel drawn: the
// default (64), and small ones, whose levels are short enough that the
// delays drawn move down several levels before they fire.
var wheelSlotChoices = []int{64, 4, 2}
