package netloop

// How a Conn ends, and what its peer sees, is Conn's doc: a close that
// discards queued output or unconsumed input, and every Abort, resets
// the connection (fail and Abort set Conn.reset; removed arms the reset
// before it closes the Stream).

// linger is a Stream that can be closed with a reset (*socket.TCPConn).
type linger interface{ SetLinger(sec int) error }

// resetOnClose arms the reset the Stream's Close then sends. A Stream
// that cannot reset, or a setsockopt that fails on a socket already gone,
// leaves the ordinary close: there is nothing better left to do.
func (c *Conn) resetOnClose() {
	c.reset = true
	if s, ok := c.s.(linger); ok {
		_ = s.SetLinger(0)
	}
}
