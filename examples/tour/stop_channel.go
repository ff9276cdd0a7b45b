package main

import (
	"errors"

	"github.com/unipoll/unipoll/channel"
	"github.com/unipoll/unipoll/poll"
)

// channelStop: a channel fed from another goroutine; no system call per
// value, and its Receiver waits in the same Poll as the socket.
type channelStop struct {
	values []string
	rx     *channel.Receiver[string]
}

func (*channelStop) name() string { return "channel" }

func (s *channelStop) start(p *poll.Poll, tok poll.Token, say sayFunc) error {
	tx, rx := channel.New[string]()
	s.rx = rx
	if err := p.Register(rx, tok, poll.Readable, poll.Edge); err != nil {
		return errors.Join(err, tx.Close())
	}
	say("Registered a channel's Receiver as token %d; a goroutine sends %d values and closes.", tok, len(s.values))
	go func() {
		defer tx.Close()
		for _, v := range s.values {
			if tx.Send(v) != nil {
				return
			}
		}
	}()
	return nil
}

// handle receives until ErrEmpty (Edge: the next value brings a new
// event); the stop is done once every Sender has closed.
func (s *channelStop) handle(_ poll.Event, say sayFunc) (bool, error) {
	var got []string
	for {
		v, err := s.rx.TryRecv()
		switch {
		case err == nil:
			got = append(got, v)
			continue
		case errors.Is(err, channel.ErrEmpty):
			say("received %q", got)
			return false, nil
		case errors.Is(err, channel.ErrDisconnected):
			say("received %q, then the sender closed", got)
			return true, nil
		default:
			return false, err
		}
	}
}

func (s *channelStop) close() error {
	if s.rx == nil {
		return nil
	}
	return s.rx.Close()
}
