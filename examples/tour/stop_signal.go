package main

import (
	"syscall"

	"github.com/unipoll/unipoll/poll"
	"github.com/unipoll/unipoll/signal"
)

// signalStop: a Unix signal, here one the process sends itself. No
// goroutine of the program's own: the library's relay counts the delivery
// and makes the Watcher Readable.
type signalStop struct {
	w *signal.Watcher
}

func (*signalStop) name() string { return "signal" }

func (s *signalStop) start(p *poll.Poll, tok poll.Token, say sayFunc) error {
	w, err := signal.New(syscall.SIGUSR1)
	if err != nil {
		return err
	}
	s.w = w
	if err := p.Register(w, tok, poll.Readable, poll.Edge); err != nil {
		return err
	}
	// The Watcher is registered with os/signal by now, so the signal
	// cannot take its default action (which would end the process).
	if err := syscall.Kill(syscall.Getpid(), syscall.SIGUSR1); err != nil {
		return err
	}
	say("Watched SIGUSR1 as token %d and sent it to ourselves.", tok)
	return nil
}

// handle drains every pending signal (Edge: a later delivery makes a new
// event).
func (s *signalStop) handle(_ poll.Event, say sayFunc) (bool, error) {
	got := false
	for sig, ok := s.w.TryRecv(); ok; sig, ok = s.w.TryRecv() {
		say("%v", sig)
		got = true
	}
	return got, nil
}

func (s *signalStop) close() error {
	if s.w == nil {
		return nil
	}
	return s.w.Close()
}
