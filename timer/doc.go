// Package timer is a queue of timeouts carrying values, on the Poll's own
// timing wheel: a program waits for timers, sockets, channels and every
// other source with one Poll call, with no goroutine and no OS timer per
// timeout.
//
// A Timer[T] is a poll.Evented: registered with a Poll for Readable, it is
// reported when a timeout has expired, and TryRecv hands out the expired
// values in deadline order. Set and Cancel may be called from any
// goroutine.
//
//   - Make one: New, with the options Tick (resolution) and Capacity.
//   - Schedule and cancel: Set, Cancel; a Timeout handle stays safe after
//     its timeout fired or was cancelled.
//   - Take what expired: TryRecv, Drain; Len and Stats count.
//   - Release: Close.
//
// Every Timer registered with one Poll lives in that Poll's one
// hierarchical timing wheel (with the Poll's delayed readiness), so a
// tick costs what expires, not what is pending, and a million pending
// timeouts cost about 40 bytes each beyond their values.
//
// A value of a type that fits in 8 bytes and holds no pointer (an int, a
// poll.Token, a small struct of numbers) travels in its timeout's wheel
// entry: such a Timer keeps no table of values, and a Set with its Cancel
// costs about a sixth less than with a value that holds a pointer (a
// string, a *Request), which the Timer keeps in a table of its own. Both
// behave the same in every other way.
//
// A typical loop:
//
//	t, _ := timer.New[string]()
//	_ = p.Register(t, tok, poll.Readable, poll.Edge)
//	_, _ = t.Set(50*time.Millisecond, "retry")
//	for {
//		_, _ = p.Poll(events, -1)
//		for ev := range events.All() {
//			if ev.Token == tok {
//				for v := range t.Drain() { // Edge: take all, the next expiry makes a new event
//					handle(v)
//				}
//			}
//		}
//	}
package timer
