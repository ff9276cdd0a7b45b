package sys

// Stream is a connected stream socket whose I/O its selector does itself
// (completion mode): the io_uring backend with Options.Completion receives
// into buffers it owns and sends from a queue, so that a read or a write
// is a copy in user space and the system calls are the selector's, one
// per wait. Its readiness is its own: Readable means bytes (or the end, or
// an error) are waiting in the Stream, Writable means room in its queue.
//
// Read and Write mirror read(2) and write(2) on a non-blocking socket:
// Read returns the bytes waiting (0 and a nil error at the end of the
// stream, unix.EAGAIN when nothing is waiting); Write queues what fits
// and returns unix.EAGAIN with the count when not all of it did. Both are
// safe from any goroutine. Once the descriptor is deleted from the
// selector, Read still returns what the Stream received before, in order,
// and then reads the descriptor itself; Write queues behind the sends
// still in flight, and writes the descriptor itself once none is. So a
// caller may keep using the Stream for the descriptor's whole life.
type Stream interface {
	Read(p []byte) (n int, err error)
	Write(p []byte) (n int, err error)
	// CloseWrite shuts the sending side down (shutdown(2), SHUT_WR) once
	// every byte queued before it has been sent; Write fails with EPIPE
	// from then on.
	CloseWrite() error
	// Buffered reports the bytes received that Read has not returned
	// (unread) and the bytes Write queued that the kernel has not taken
	// (unsent), after a look at what the kernel has completed (as Read
	// does when it finds nothing). With SIOCINQ and SIOCOUTQ of the
	// socket they account for every byte.
	Buffered() (unread, unsent int)
	// Flushed reports whether every byte Write queued has gone to the
	// kernel, or the sending side has failed (a reset, or the selector
	// closed with bytes not sent: they are dropped, and Write returns the
	// error). When some wait, the registration's next event is a
	// Writable that comes once they all have (whatever the mode's
	// quiet), so a caller can wait for it before it closes.
	Flushed() bool
}

// StreamSelector is a Selector that can take over a stream socket's I/O.
type StreamSelector interface {
	Selector
	// AddStream is Add for a connected stream socket whose I/O the caller
	// does through the returned Stream. It returns a nil Stream and no
	// error when the selector does plain readiness for fd (the caller
	// reads it itself), as every selector without completion mode does.
	AddStream(fd int, key uint64, interest uint32, mode Mode) (Stream, error)
}
