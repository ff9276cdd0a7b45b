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
// Most values travel with their timeout's wheel entry, and such a Timer
// keeps no table of values: a type that fits in 8 bytes and holds no
// pointer (an int, a poll.Token, a small struct of numbers) in the entry's
// key, and one of at most 16 bytes whose first word is a pointer and
// whose second holds none (a *Request, a string, a map, a func, a struct
// of a pointer and a number) in the key and beside it, where the garbage
// collector sees the pointer. Any other type (an interface, a slice, a
// bigger struct) is kept in a table of the Timer's own, which makes a Set
// with its Cancel about a third dearer. All behave the same in every
// other way.
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
