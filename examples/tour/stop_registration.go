package main

import "github.com/unipoll/unipoll/poll"

// registrationStop: user-space readiness, set by our own code from any
// goroutine.
type registrationStop struct {
	reg *poll.Registration
}

func (*registrationStop) name() string { return "Registration" }

func (s *registrationStop) start(p *poll.Poll, tok poll.Token, say sayFunc) error {
	reg, set := poll.NewRegistration()
	s.reg = reg
	if err := p.Register(reg, tok, poll.Readable, poll.Edge); err != nil {
		return err
	}
	say("Registered a user-space Registration as token %d; a goroutine sets it ready.", tok)
	go func() { _ = set.SetReadiness(poll.Readable) }()
	return nil
}

func (s *registrationStop) handle(_ poll.Event, say sayFunc) (bool, error) {
	say("set by another goroutine")
	return true, nil
}

func (s *registrationStop) close() error {
	if s.reg == nil {
		return nil
	}
	return s.reg.Close()
}
