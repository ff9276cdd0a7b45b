package main

import "sync/atomic"

// clientMemory is the budget that all clients' unconsumed input shares
// (-max-client-memory), as redis-server's maxmemory-clients bounds its
// clients' buffers: a request that arrives in pieces is held in its
// Conn's buffer until it is whole, and 500 clients each holding half of a
// big request must not take the server's memory with them.
//
// What is counted is what each session leaves unconsumed after a Data
// call: the partial request at the end of its input (and, under back
// pressure, complete requests not yet run). The Conn's buffer around it
// may be up to twice that, as it grows by doubling, and an idle Conn may
// keep a buffer of up to 64 KiB; both are per client and small next to
// what they hold, and are not counted.
//
// A session whose holding would pass the limit is refused: it gets an
// error reply and its Conn closes, and what it held is released. redis
// closes the largest clients instead. Refusing the one that grows needs
// no reach into another Loop's Conns, and the total never passes the
// limit, not even until another Loop gets round to closing its client;
// the largest is most often the one growing anyway. The cost: while big
// partial requests fill the budget, a request that arrives in pieces is
// refused too, however small (one that arrives whole holds nothing).
//
// Invariants, which the Loops rely on without a lock between them:
//  1. held is the sum of every live session's holding. A session changes
//     its own holding only on its Loop (in Data and Closed), and the total
//     with it, in one atomic step.
//  2. held never passes limit: it grows only by a compare-and-swap from a
//     value that, grown, is within limit; shrinking cannot pass it.
//  3. A session's holding is 0 once its Conn is closed (Closed releases
//     it), so held is 0 when no client is connected.
type clientMemory struct {
	limit int64
	held  atomic.Int64
	// peak is the most held at once; refused counts the clients refused
	// (INFO's evicted_clients).
	peak, refused atomic.Int64
}

// resize moves a session's holding, *mine, to n bytes. It reports false,
// changing nothing, if growing to n would pass the limit.
func (m *clientMemory) resize(mine *int64, n int64) bool {
	d := n - *mine
	if d <= 0 {
		if d < 0 {
			m.held.Add(d)
		}
		*mine = n
		return true
	}
	for {
		old := m.held.Load()
		if old+d > m.limit {
			return false
		}
		if m.held.CompareAndSwap(old, old+d) {
			noteMax(&m.peak, old+d)
			*mine = n
			return true
		}
	}
}
