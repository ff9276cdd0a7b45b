package main

import (
	"time"

	"github.com/unipoll/unipoll/poll"
)

// delayStop: delayed readiness, fired by the Poll's own timing wheel; no
// timer goroutine, no OS timer.
type delayStop struct {
	delay time.Duration
	reg   *poll.Registration
	at    time.Time
}

func (*delayStop) name() string { return "delayed" }

func (s *delayStop) start(p *poll.Poll, tok poll.Token, say sayFunc) error {
	reg, set := poll.NewRegistration()
	s.reg = reg
	if err := p.Register(reg, tok, poll.Readable, poll.Oneshot); err != nil {
		return err
	}
	s.at = time.Now()
	if err := set.DelayReadiness(poll.Readable, s.delay); err != nil {
		return err
	}
	say("Asked for token %d to become ready in %v.", tok, s.delay)
	return nil
}

func (s *delayStop) handle(_ poll.Event, say sayFunc) (bool, error) {
	say("fired by the timing wheel after %v", time.Since(s.at).Round(time.Millisecond))
	return true, nil
}

func (s *delayStop) close() error {
	if s.reg == nil {
		return nil
	}
	return s.reg.Close()
}
