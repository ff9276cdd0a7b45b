//go:build unix

package child

import "github.com/unipoll/unipoll/poll"

// PipeReader is this process's end of a pipe from a child's standard
// output or standard error (Start makes it): non-blocking, close-on-exec,
// and a poll.Evented, so the child's output is read on the Poll like any
// other source, with no goroutine copying it.
//
// Read returns what the pipe holds, ErrWouldBlock when it holds nothing
// yet, and io.EOF once every write end is closed: the child's, and those of
// any process that inherited it (a grandchild left running keeps the pipe
// open, and io.EOF waits for it; the Watcher's exit event and cmd.Wait()
// do not). Readable is reported when there is data, and at the end; a
// registration that asks for Hup sees the end as Hup too.
//
// Under Edge a read pass may stop at ErrWouldBlock or at a short read
// (fewer bytes than the buffer holds), as with a stream socket, except
// when the event reported Hup: then read on to io.EOF. The pipe ends the
// pass itself at those points (poll.Fd.Drained), so that the
// poll(2) backend reports each edge once and loses none. After io.EOF a
// Level registration reports the pipe on every Poll call: Close it (or
// Deregister it).
//
// Methods are safe from several goroutines; Close waits for a Read in
// progress (which never blocks). A PipeReader is registered with one Poll
// at a time, as a socket is. The zero PipeReader, and a nil one, is not
// usable: its methods return an error wrapping ErrInvalidArgument (Fd
// returns -1).
type PipeReader struct{ e pipeEnd }

// PipeWriter is this process's end of a pipe to a child's standard input
// (Start makes it): non-blocking, close-on-exec, and a poll.Evented that
// is Writable while the pipe has room.
//
// Write writes all it is given, or as much as the pipe takes: then it
// returns the count and ErrWouldBlock, and the rest waits for the next
// Writable event (back pressure: a child that reads slowly slows its
// writer, nothing piles up here). Once nobody reads the pipe any more (the
// child and whoever inherited it closed it, or exited), Write fails with
// an error matching syscall.EPIPE, and the pipe is reported Error (so
// Readable and Writable too). Close is the child's end of input: its next
// read returns end of file.
//
// Under Edge a write pass may stop at ErrWouldBlock; the pipe ends the
// pass there itself (Drained). Other rules are PipeReader's.
type PipeWriter struct{ e pipeEnd }

var (
	_ poll.Evented = (*PipeReader)(nil)
	_ poll.Evented = (*PipeWriter)(nil)
)

// end is the shared part, or nil for a nil pipe (every method of pipeEnd
// takes nil as a pipe never opened).
func (r *PipeReader) end() *pipeEnd {
	if r == nil {
		return nil
	}
	return &r.e
}

func (w *PipeWriter) end() *pipeEnd {
	if w == nil {
		return nil
	}
	return &w.e
}

// Read reads what the pipe holds, up to len(b) bytes: n > 0 with a nil
// error; 0 and ErrWouldBlock (unwrapped) when it is empty but a writer
// remains; 0 and io.EOF once no writer remains. A zero-length b returns 0
// and nil.
func (r *PipeReader) Read(b []byte) (int, error) { return readPipe(r.end(), b) }

// Close deregisters the pipe from its Poll, if any, and closes it. A child
// that writes to it afterwards gets EPIPE (or dies of SIGPIPE, the default
// for most programs). A second Close returns an error matching ErrClosed.
func (r *PipeReader) Close() error { return r.end().Close() }

// Fd returns the descriptor, or -1 if the pipe is closed. Register the
// PipeReader itself, not poll.Fd(r.Fd()): only a registration made through
// it has its passes ended under Edge and is undone by Close.
func (r *PipeReader) Fd() int { return r.end().Sysfd() }

// String names the pipe: "stdout of pid 1234".
func (r *PipeReader) String() string { return string(r.end().Name()) }

// Register implements poll.Evented; call Poll.Register instead.
func (r *PipeReader) Register(p *poll.Poll, t poll.Token, interest poll.Ready, opts poll.PollOpt) error {
	return r.end().Register(p, t, interest, opts)
}

// Reregister implements poll.Evented; call Poll.Reregister instead.
func (r *PipeReader) Reregister(p *poll.Poll, t poll.Token, interest poll.Ready, opts poll.PollOpt) error {
	return r.end().Reregister(p, t, interest, opts)
}

// Deregister implements poll.Evented; call Poll.Deregister instead.
func (r *PipeReader) Deregister(p *poll.Poll) error { return r.end().Deregister(p) }

// Write writes b, or as much of it as the pipe takes before it is full:
// then it returns the count and ErrWouldBlock (unwrapped). Write the rest
// on the next Writable event.
func (w *PipeWriter) Write(b []byte) (int, error) { return writePipe(w.end(), b) }

// Close deregisters the pipe from its Poll, if any, and closes it: the
// child reads end of file once what was written is read. A second Close
// returns an error matching ErrClosed.
func (w *PipeWriter) Close() error { return w.end().Close() }

// Fd returns the descriptor, or -1 if the pipe is closed (see
// PipeReader.Fd).
func (w *PipeWriter) Fd() int { return w.end().Sysfd() }

// String names the pipe: "stdin of pid 1234".
func (w *PipeWriter) String() string { return string(w.end().Name()) }

// Register implements poll.Evented; call Poll.Register instead.
func (w *PipeWriter) Register(p *poll.Poll, t poll.Token, interest poll.Ready, opts poll.PollOpt) error {
	return w.end().Register(p, t, interest, opts)
}

// Reregister implements poll.Evented; call Poll.Reregister instead.
func (w *PipeWriter) Reregister(p *poll.Poll, t poll.Token, interest poll.Ready, opts poll.PollOpt) error {
	return w.end().Reregister(p, t, interest, opts)
}

// Deregister implements poll.Evented; call Poll.Deregister instead.
func (w *PipeWriter) Deregister(p *poll.Poll) error { return w.end().Deregister(p) }
