package netloop

// How a Conn ends, and what its peer sees.
//
// A Conn closes with a FIN (the peer reads the end of stream) only when
// nothing was thrown away: Close, CloseWrite and the end of input write
// every byte queued first. A close that discards something resets the
// connection instead (SO_LINGER 0, then close), so that the peer's next
// read fails with ECONNRESET and a truncated stream never passes for a
// whole one:
//
//   - Abort resets always, also with nothing queued: it says the
//     exchange failed.
//   - An error or a timeout (ErrReadTimeout, ErrIdleTimeout,
//     ErrWriteTimeout, ErrReadBufferFull, a failed read or write) resets
//     when output was queued and not yet written, or input received and
//     not consumed by the handler. With neither, nothing was lost, and it
//     closes with a FIN: a ReadTimeout on a Conn that answered everything
//     is an ordinary end.
//   - The Loop's Close removes its Conns: one with output still queued
//     resets.
//
// A reset also throws away what the kernel still held to send. A Stream
// without SetLinger (a Unix socket has no reset) closes as it always
// does: its peer reads the end of stream.

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
