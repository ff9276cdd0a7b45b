package main

import (
	"time"

	"github.com/unipoll/unipoll/poll"
	"github.com/unipoll/unipoll/timer"
)

// timerStop: timeouts carrying values, on the Poll's own timing wheel; set
// in any order, they come out in deadline order.
type timerStop struct {
	tm   *timer.Timer[string]
	at   time.Time
	left int
}

func (*timerStop) name() string { return "timer" }

func (s *timerStop) start(p *poll.Poll, tok poll.Token, say sayFunc) error {
	tm, err := timer.New[string]()
	if err != nil {
		return err
	}
	s.tm = tm
	if err := p.Register(tm, tok, poll.Readable, poll.Edge); err != nil {
		return err
	}
	s.at = time.Now()
	for _, t := range []struct {
		d time.Duration
		v string
	}{{30 * time.Millisecond, "second"}, {20 * time.Millisecond, "first"}} {
		if _, err := tm.Set(t.d, t.v); err != nil {
			return err
		}
		s.left++
	}
	say("Set two timeouts on a Timer, token %d, in the order 30ms, 20ms.", tok)
	return nil
}

// handle takes everything that expired (Edge: the next expiry makes a new
// event).
func (s *timerStop) handle(_ poll.Event, say sayFunc) (bool, error) {
	for v := range s.tm.Drain() {
		say("%q expired after %v", v, time.Since(s.at).Round(time.Millisecond))
		s.left--
	}
	return s.left == 0, nil
}

func (s *timerStop) close() error {
	if s.tm == nil {
		return nil
	}
	return s.tm.Close()
}
