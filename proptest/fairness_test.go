//go:build linux

package proptest

import (
	"fmt"
	"strings"
	"testing"

	"golang.org/x/sys/unix"
	"pgregory.net/rapid"

	"github.com/unipoll/unipoll/poll"
)

// TestFairness (rules 8, 11): many sources that stay ready, descriptors and
// Registrations, level-triggered or edge-triggered and made ready again
// after each of their events, polled with a buffer too small for all of
// them. Every source must be reported within 2n+2 consecutive calls (n
// sources): neither kind may starve the other, and within a kind no source
// may starve another (the selector and the readiness queue must rotate).
func TestFairness(t *testing.T) {
	forEachBackend(t, fairness)
}

type fairSource struct {
	label  string
	opts   poll.PollOpt
	set    *poll.SetReadiness // registration
	fd     int                // socket: the registered end
	peer   int                // socket: the peer, written after edge events
	waited int                // calls since last reported
}

func fairness(t *rapid.T, be string) {
	p := drawPoll(t, be)
	defer p.Close()
	n := rapid.IntRange(2, 8).Draw(t, "sources")
	srcs := make([]*fairSource, n)
	for i := range srcs {
		s := &fairSource{peer: -1, opts: rapid.SampledFrom([]poll.PollOpt{poll.Level, poll.Edge}).Draw(t, "opts")}
		var e poll.Evented
		if rapid.Bool().Draw(t, "socket") {
			fds := socketPair(t)
			defer unix.Close(fds[0])
			defer unix.Close(fds[1])
			_, _ = unix.Write(fds[1], []byte("x"))
			s.fd, s.peer = fds[0], fds[1]
			s.label = fmt.Sprintf("sock%d(%s)", i, s.opts)
			e = poll.Fd(fds[0])
		} else {
			r, set := poll.NewRegistration()
			defer r.Close()
			_ = set.SetReadiness(poll.Readable)
			s.set = set
			s.label = fmt.Sprintf("reg%d(%s)", i, s.opts)
			e = r
		}
		if err := p.Register(e, poll.Token(i), poll.Readable, s.opts); err != nil {
			t.Fatalf("Register: %v", err)
		}
		srcs[i] = s
	}
	capacity := rapid.IntRange(1, 3).Draw(t, "capacity")
	bound := 2*n + 2
	ev := poll.NewEvents(capacity)
	var hist []string
	for call := 1; call <= 3*bound; call++ {
		if _, err := p.Poll(ev, 0); err != nil {
			t.Fatalf("Poll: %v", err)
		}
		totals.polls.Add(1)
		var got []string
		for _, s := range srcs {
			s.waited++
		}
		for e := range ev.All() {
			totals.events.Add(1)
			s := srcs[e.Token]
			s.waited = 0
			got = append(got, s.label)
			if s.opts.IsEdge() { // a new edge, so that it stays owed
				if s.set != nil {
					_ = s.set.SetReadiness(poll.Readable)
				} else {
					// Written, and re-armed as the rule under Edge says
					// (here without reading first: the data is unread,
					// so an emulated edge reports it again at once).
					_, _ = unix.Write(s.peer, []byte("x"))
					if err := poll.Fd(s.fd).Drained(p, poll.Readable); err != nil {
						t.Fatalf("Drained: %v", err)
					}
				}
			}
		}
		hist = append(hist, fmt.Sprintf("Poll#%d: %s", call, strings.Join(got, " ")))
		for _, s := range srcs {
			if s.waited > bound {
				t.Fatalf("%s, always ready, was not reported by %d consecutive Poll calls (capacity %d, %d sources): starved (rule 11)\n  %s",
					s.label, s.waited, capacity, n, strings.Join(hist, "\n  "))
			}
		}
	}
}
