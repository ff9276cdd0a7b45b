package netloop

import "time"

// ConnStats are a Conn's counters: what moved each way, in how many
// system calls, and since when. For a TLS Conn (Config.TLS) they count
// plaintext: the bytes the handler received and the bytes of its queue
// written (encrypted and all on the socket), and the Reads and Writes of
// the Conn's TLS session that moved some, not system calls.
type ConnStats struct {
	// Connected is when the Conn was added to its Loop.
	Connected time.Time
	// BytesRead and Reads count the input read from the Stream and the
	// reads that returned some (a read that found nothing is not counted).
	BytesRead, Reads uint64
	// BytesWritten and Writes count the output the Stream took and the
	// writes that took some.
	BytesWritten, Writes uint64
}

// Stats returns the Conn's counters. Like the Conn's other methods, call
// it from the Conn's own calls (its handler, an Async function); they are
// final, and still readable, once it is closed (in CloseHandler). A zero
// Conn has zero ConnStats.
func (c *Conn) Stats() ConnStats {
	if c.zero() {
		return ConnStats{}
	}
	return c.stats.public()
}

// connStats is what a Conn keeps of its ConnStats: the time connected as
// a number (8 bytes, not a time.Time's 24).
type connStats struct {
	connected            int64 // Unix nanoseconds
	BytesRead, Reads     uint64
	BytesWritten, Writes uint64
}

func (s connStats) public() ConnStats {
	return ConnStats{Connected: time.Unix(0, s.connected), BytesRead: s.BytesRead, Reads: s.Reads, BytesWritten: s.BytesWritten, Writes: s.Writes}
}
