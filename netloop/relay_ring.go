package netloop

// relayRingSize is the copy's buffer per direction: as much as a pipe
// holds by default, so that both transports bound a relay alike.
const relayRingSize = 64 << 10

// ringTransport is the copy: a ring buffer that the source reads its
// socket into and the sink writes its socket from. The two touch disjoint
// parts of it, told apart by the direction's counters, which are atomic
// and advanced after the bytes are in (or out): they carry the
// happens-before that makes the bytes visible to the other side.
type ringTransport struct{ buf []byte }

func newRing() *ringTransport { return &ringTransport{buf: make([]byte, relayRingSize)} }

func (t *ringTransport) fill(c *Conn, at int64, room int) (int, error) {
	i := int(at % int64(len(t.buf)))
	return c.s.Read(t.buf[i : i+min(room, len(t.buf)-i)])
}

func (t *ringTransport) drain(c *Conn, at int64, n int) (int, error) {
	i := int(at % int64(len(t.buf)))
	return c.s.Write(t.buf[i : i+min(n, len(t.buf)-i)])
}

func (t *ringTransport) bound() int       { return len(t.buf) }
func (t *ringTransport) fullBlocks() bool { return false }
func (t *ringTransport) grow() bool       { return false }
func (t *ringTransport) close()           {}
