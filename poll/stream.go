package poll

import "github.com/unipoll/unipoll/sys"

// Stream is the I/O of a connected stream socket that a Poll's backend does
// itself (completion mode: Config.Completion on the "uring" backend). Its
// bytes are received into buffers the backend owns and sent from a queue,
// both with the Poll's waits, so that Read and Write are copies in user
// space and the system calls are the Poll's own, a few per wait instead of
// one per read and per write.
//
// Read and Write behave as read(2) and write(2) on a non-blocking socket:
// Read returns what has arrived (0 and a nil error at the end of the
// stream, unix.EAGAIN when nothing has), Write queues what fits and returns
// the count with unix.EAGAIN when not all of it did. The registration's
// readiness is the Stream's: Readable means bytes (or the end, or an
// error) wait in it, Writable means room in its queue; under Edge, end a
// pass with Fd.Drained, as for any descriptor. Both are safe from any
// goroutine.
//
// A Stream stays valid for the descriptor's life: after Deregister, Read
// returns what the backend received before, in order, and then reads the
// descriptor itself; Write queues behind the sends still in flight, and
// writes the descriptor itself once none is. The sends still in flight go
// out as the Poll keeps polling; a Poll closed first cancels them.
type Stream interface {
	Read(p []byte) (n int, err error)
	Write(p []byte) (n int, err error)
	// CloseWrite shuts the sending side down (shutdown(2) with SHUT_WR)
	// once every byte queued before it has been sent; Write fails with
	// unix.EPIPE from then on.
	CloseWrite() error
	// Buffered reports the bytes the backend received that Read has not
	// returned (unread) and the bytes Write queued that the kernel has not
	// taken (unsent): with the socket's own queues (SIOCINQ, SIOCOUTQ)
	// they account for every byte. It first lets the kernel post what it
	// has completed, as a Read that finds nothing does.
	Buffered() (unread, unsent int)
	// Flushed reports whether every byte Write queued has gone to the
	// kernel, or the sending side has failed (a reset, or the Poll closed
	// with bytes not sent: they are dropped, and Write returns the
	// error). When some wait, the registration gets a Writable event
	// once they all have (under Edge too, without a Drained), so that a
	// caller who wants to close after its output can wait for it: closing
	// earlier leaves the rest to go out on later Polls, and a Poll closed
	// first cancels it.
	Flushed() bool
}

// RegisterStream registers fd, a connected stream socket (TCP or Unix), as
// Register does, and returns the Stream through which its I/O must go from
// then on when the Poll's backend does stream I/O itself. Otherwise it
// returns a nil Stream, and the caller reads and writes fd as usual. The
// socket package's TCPConn and UnixConn use it; call it for a raw
// descriptor only if every read and write of it goes through the Stream.
func (fd Fd) RegisterStream(p *Poll, t Token, interest Ready, opts PollOpt) (Stream, error) {
	if err := p.check(); err != nil {
		return nil, err
	}
	ss, ok := p.sel.(sys.StreamSelector)
	if !ok {
		return nil, p.registerFd(int(fd), t, interest, opts)
	}
	var st sys.Stream
	err := p.registerWith(int(fd), t, interest, opts, func(fd int, key uint64, interest uint32, mode sys.Mode) (err error) {
		st, err = ss.AddStream(fd, key, interest, mode)
		return err
	})
	if err != nil || st == nil {
		return nil, err
	}
	return st, nil
}
