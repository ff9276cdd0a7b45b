package netloop

import "github.com/unipoll/unipoll/poll"

// Stream is what a Conn drives: a non-blocking byte stream that is a
// poll.Evented. *socket.TCPConn and *socket.UnixConn are Streams. Read and
// Write return an error matching EAGAIN (socket.ErrWouldBlock) when they
// cannot proceed, and Read returns io.EOF after the peer's orderly
// shutdown. The Conn owns the Stream: it closes it when it is removed.
type Stream interface {
	poll.Evented
	Read(b []byte) (int, error)
	Write(b []byte) (int, error)
	CloseWrite() error
	Close() error
}

// Handler is a Conn's protocol. Data is called with every byte that
// has arrived and not yet been consumed, after each read; it returns how
// many of them it consumed (from the front). The rest is handed to it
// again, with what arrives next, or when reading resumes after back
// pressure. in is valid only during the call (it may be a buffer the
// Loop shares between connections): copy what must outlive it.
//
// A Handler may also implement CloseHandler, EOFHandler and
// PressureHandler.
// All of them run on the Loop, never concurrently with each other for one
// Conn.
type Handler interface {
	Data(c *Conn, in []byte) (consumed int)
}

// HandlerFunc adapts a function to Handler.
type HandlerFunc func(c *Conn, in []byte) int

// Data calls f(c, in).
func (f HandlerFunc) Data(c *Conn, in []byte) int { return f(c, in) }

// CloseHandler is told when a Conn is closed: its Stream has been closed and
// the Conn is off the Loop. err is nil after Close or the peer's end of
// input, otherwise what ended it (a read or write error, ErrReadBufferFull,
// an idle or read timeout).
type CloseHandler interface {
	Closed(c *Conn, err error)
}

// EOFHandler is told when the peer has finished sending (Read returned
// io.EOF); reading stops. Without it, the Conn closes once its queued
// output is written (Close). With it, the handler decides: write more and
// Close, or CloseWrite, or keep the Conn open to send on.
type EOFHandler interface {
	ReadClosed(c *Conn)
}

// PressureHandler is told when the Conn's queued output passes
// Config.HighWater (high is true: the Conn has stopped reading, so a
// peer that sends without reading the replies cannot make it queue
// without bound) and when it drains to LowWater or less again (high is
// false: reading resumes).
type PressureHandler interface {
	Pressure(c *Conn, high bool)
}
