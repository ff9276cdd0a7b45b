package eventloop

import (
	"context"
	"testing"

	"github.com/unipoll/unipoll/poll"
)

// The Loop's overhead per event, against the same work done on Poll
// directly. Both sides poll the same kind of sources (always-ready Level
// Registrations, so no system call blurs the difference) and call a
// handler through an interface for each event; the raw side finds it by
// indexing a slice with the token, as a hand-written loop would. The
// difference of the two ns/op is what the Loop adds per dispatched event:
// routing, the run queue, the claim and release, the action.
const benchSources = 64

type countHandler struct {
	n, limit int
}

func (h *countHandler) Ready(l *Loop, ev poll.Event) Action {
	h.n++
	if h.n == h.limit {
		l.Shutdown()
	}
	return Keep
}

type rawHandler interface{ Ready(ev poll.Event) }

type rawCount struct{ n int }

func (h *rawCount) Ready(poll.Event) { h.n++ }

func levelSources(b *testing.B, register func(i int, r *poll.Registration)) []*poll.Registration {
	regs := make([]*poll.Registration, benchSources)
	for i := range regs {
		r, set := poll.NewRegistration()
		register(i, r)
		if err := set.SetReadiness(poll.Readable); err != nil {
			b.Fatal(err)
		}
		regs[i] = r
	}
	return regs
}

func BenchmarkDispatch(b *testing.B) {
	b.Run("raw", func(b *testing.B) {
		p, err := poll.New()
		if err != nil {
			b.Fatal(err)
		}
		defer p.Close()
		h := &rawCount{}
		handlers := make([]rawHandler, benchSources)
		regs := levelSources(b, func(i int, r *poll.Registration) {
			handlers[i] = h
			if err := p.Register(r, poll.Token(i), poll.Readable, poll.Level); err != nil {
				b.Fatal(err)
			}
		})
		defer func() {
			for _, r := range regs {
				r.Close()
			}
		}()
		events := poll.NewEvents(DefaultEvents)
		b.ReportAllocs()
		b.ResetTimer()
		for h.n < b.N {
			n, err := p.Poll(events, -1) // as a loop does: block when nothing is ready
			if err != nil {
				b.Fatal(err)
			}
			for i := range n {
				ev := events.At(i)
				handlers[ev.Token].Ready(ev)
			}
		}
	})
	b.Run("loop", func(b *testing.B) {
		l, err := New(Config{})
		if err != nil {
			b.Fatal(err)
		}
		defer l.Close()
		h := &countHandler{limit: b.N}
		regs := levelSources(b, func(i int, r *poll.Registration) {
			if _, err := l.Add(r, poll.Readable, poll.Level, h); err != nil {
				b.Fatal(err)
			}
		})
		defer func() {
			for _, r := range regs {
				r.Close()
			}
		}()
		b.ReportAllocs()
		b.ResetTimer()
		if err := l.Run(context.Background(), nil); err != nil {
			b.Fatal(err)
		}
	})
}
