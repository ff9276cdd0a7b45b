//go:build unix

package main

import (
	"bytes"
	"errors"
	"fmt"
	"io"

	"github.com/unipoll/unipoll/child"
	"github.com/unipoll/unipoll/poll"
)

// output is one stream of a running command (its stdout or its stderr): the
// PipeReader child.Start made, registered with the supervisor's Poll, and
// the line it has begun and not yet ended. Its lines are written to the
// supervisor's output as they end, prefixed with the task and the stream.
//
// A command's output ends with it: when its exit is reported, the
// supervisor takes what is left in its pipes (the command wrote it before
// exiting, so it is all there) and closes them. A process the command left
// running that writes to them afterwards gets EPIPE. Waiting for their end
// of file instead would let such a process hold the task (the pipe is
// theirs as long as they live), which is what this way of capturing output
// is for avoiding: cmd.Wait() never waits for the pipes.
type output struct {
	task    int    // the task's number, for the prefix
	stream  string // "out" or "err"
	r       *child.PipeReader
	partial []byte // the line begun and not yet ended
}

// maxLine bounds a line held back for its end: a command that writes more
// without a newline has it printed in pieces of this size.
const maxLine = 64 << 10

func newOutput(p *poll.Poll, tok poll.Token, task int, stream string, r *child.PipeReader) (*output, error) {
	// Edge-triggered: each event's pass reads until ErrWouldBlock (or
	// io.EOF), after which new output is a new edge.
	if err := p.Register(r, tok, poll.Readable, poll.Edge); err != nil {
		return nil, err
	}
	return &output{task: task, stream: stream, r: r}, nil
}

// readable reads all the pipe holds, as an Edge registration asks, and
// writes the lines that end. At the end of the stream it writes the line
// left unended and closes the pipe, and reports that it did.
func (o *output) readable(out io.Writer, buf []byte) (ended bool) {
	for {
		n, err := o.r.Read(buf)
		o.take(out, buf[:n])
		switch {
		case err == nil:
			continue
		case errors.Is(err, child.ErrWouldBlock):
			return false
		case !errors.Is(err, io.EOF):
			fmt.Fprintf(out, "[%d] %s: reading: %v\n", o.task, o.stream, err)
		}
		o.close(out)
		return true
	}
}

// take writes each line of b that ends, and keeps the rest.
func (o *output) take(out io.Writer, b []byte) {
	for len(b) > 0 {
		i := bytes.IndexByte(b, '\n')
		if i < 0 {
			o.partial = append(o.partial, b...)
			if len(o.partial) >= maxLine {
				o.line(out, o.partial)
			}
			return
		}
		o.line(out, append(o.partial, b[:i]...))
		b = b[i+1:]
	}
}

func (o *output) line(out io.Writer, l []byte) {
	fmt.Fprintf(out, "[%d] %s: %s\n", o.task, o.stream, l)
	o.partial = o.partial[:0]
}

// close writes the line left unended, if any, and closes the pipe (which
// deregisters it).
func (o *output) close(out io.Writer) {
	if len(o.partial) > 0 {
		o.line(out, o.partial)
	}
	_ = o.r.Close()
}
