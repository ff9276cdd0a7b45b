package main

import (
	"errors"
	"io"

	"github.com/unipoll/unipoll/child"
	"github.com/unipoll/unipoll/poll"
)

// childOutputStop: the stdout of childStop's child, a child.PipeReader
// registered like a socket. Its end of file comes when every process that
// holds the pipe has closed it, which may be before or after the exit
// event: the two are separate sources.
type childOutputStop struct {
	kid *childStop
	buf [512]byte
}

func (*childOutputStop) name() string { return "child output" }

func (s *childOutputStop) start(p *poll.Poll, tok poll.Token, say sayFunc) error {
	// Readable|Hup: under Edge the end of the output may come in the same
	// event as the last of it, and Hup says so.
	if err := p.Register(s.kid.pipes.Stdout, tok, poll.Readable|poll.Hup, poll.Edge); err != nil {
		return err
	}
	say("Registered the child's stdout as token %d (readable, edge-triggered).", tok)
	return nil
}

// handle reads all there is: until child.ErrWouldBlock (the next edge
// brings more) or io.EOF (the output is over).
func (s *childOutputStop) handle(_ poll.Event, say sayFunc) (bool, error) {
	r := s.kid.pipes.Stdout
	for {
		n, err := r.Read(s.buf[:])
		if n > 0 {
			say("read %q", s.buf[:n])
		}
		switch {
		case errors.Is(err, child.ErrWouldBlock):
			return false, nil
		case errors.Is(err, io.EOF):
			say("end of the child's output")
			return true, r.Close()
		case err != nil:
			return false, err
		}
	}
}

// close: childStop closes the pipes.
func (*childOutputStop) close() error { return nil }
