// Package channel is a multi-producer, single-consumer channel whose
// Receiver is a poll.Evented: a program waits for channel values, sockets
// and other sources with one Poll call, with no goroutine per channel and
// no system call per message.
//
// New and NewBounded return a Sender and a Receiver. Senders may be used
// from any goroutine and cloned; the Receiver is registered with a Poll and
// is reported Readable while values are pending (see Receiver for exactly
// when, in each trigger mode). A bounded channel's Senders are Evented too,
// reported Writable when room appears, so a producer driven by its own Poll
// never has to block.
//
// Values travel through a lock-free segmented queue that keeps each
// Sender's order, allocates at most one 64-slot segment per 64 values and
// recycles its segments, so a channel in steady use does not allocate.
//
// A Drain that keeps up with a stream of values paces itself: when its
// last look at the queue caught up with the producers, it spins before the
// next (from about 150 ns to about 1 µs, longer the faster the producers),
// so that the look finds a run of values rather than one and the
// producers' cache lines stay with them (a Receiver that keeps up
// otherwise costs each Send a cache miss). It spins only between
// batches, holding no value to return, never in a Drain's first batch or
// in TryRecv, and backs off when spins find nothing (request and response
// traffic). With GOMAXPROCS 1 it does not spin.
//
// A typical consumer:
//
//	for {
//		if _, err := p.Poll(events, -1); err != nil {
//			return err
//		}
//		for ev := range events.All() {
//			if ev.Token != chanToken {
//				continue // other sources
//			}
//			for {
//				v, err := rx.TryRecv()
//				if errors.Is(err, channel.ErrEmpty) {
//					break // wait for the next event
//				}
//				if err != nil {
//					return err // ErrDisconnected: every Sender is closed
//				}
//				handle(v)
//			}
//		}
//	}
package channel
