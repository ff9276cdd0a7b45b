//go:build linux

package main

// Scenario 5, scaling: the cost of one Poll(ev, 0) that returns 1 ready
// source among N registered, N = 10 to 100,000, for
//
//   - descriptors on epoll: both ends of N/2 idle unix socketpairs,
//     level-triggered for Readable, one of them readable (the last one
//     registered, the worst place for a scan). Flat in N by design;
//   - descriptors on poll(2): the same (O(N) by nature; for reference);
//   - Registrations: N-1 idle edge-triggered ones and one level-triggered
//     one that is always ready. Idle Registrations are never queued, so
//     this is flat too.
//
// Descriptors past the hard RLIMIT_NOFILE (about 20,000 here) cannot be
// opened, so those points are skipped with the reason.

import (
	"fmt"
	"strings"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/unipoll/unipoll/internal/testsupport"
	"github.com/unipoll/unipoll/poll"
)

func init() {
	register(Scenario{Num: 5, Name: "scaling", Title: "5. Scaling: Poll with 1 ready among N registered", Run: runScaling})
	microCase("scaling/fd-epoll", func(b *testing.B, n int) { scaleFds(b, "epoll", n) })
	microCase("scaling/fd-poll", func(b *testing.B, n int) { scaleFds(b, "poll", n) })
	microCase("scaling/registration", scaleRegs)
}

// scaleKinds are the lines of the scaling table and chart.
var scaleKinds = []struct{ label, cse string }{
	{"descriptors (epoll)", "scaling/fd-epoll"},
	{"descriptors (poll(2))", "scaling/fd-poll"},
	{"Registrations", "scaling/registration"},
}

func runScaling(r *Runner) (*Section, error) {
	ns := []int{10, 100, 1000, 10000, 100000}
	if r.o.quick {
		ns = []int{10, 1000}
	}
	d := r.dur(microFull/2, microQuick)
	// data[kind][i] is the Sample for ns[i]; skips[kind][i] says why not.
	data := map[string][]Sample{}
	skips := map[string][]string{}
	for _, n := range ns {
		var cs []contender
		for _, k := range scaleKinds {
			if k.cse == "scaling/fd-poll" && n > 10000 {
				continue // seconds per Poll: it says nothing new
			}
			cs = append(cs, contender{label: k.label, cse: k.cse, n: n})
		}
		res, skipped, err := r.alternate(r.passes(5), d, cs)
		if err != nil {
			return nil, err
		}
		for _, k := range scaleKinds {
			data[k.label] = append(data[k.label], metric(res[k.label], "ns/op"))
			why := skipped[k.label]
			if why == "" && len(res[k.label]) == 0 {
				why = "not measured (poll(2) at this N takes seconds per call)"
			}
			skips[k.label] = append(skips[k.label], why)
		}
	}
	sec := &Section{Title: "5. Scaling"}
	at := func(kind string, n int) Sample {
		for i, v := range ns {
			if v == n {
				return data[kind][i]
			}
		}
		return Sample{}
	}
	hi := ns[len(ns)-1]
	if hi > 10000 {
		hi = 10000
	}
	for _, k := range []string{"descriptors (epoll)", "Registrations"} {
		sec.Rows = append(sec.Rows, Row{
			What: fmt.Sprintf("Poll, 1 ready among %d %s, vs 10", hi, k), Unit: "ns",
			Unipoll:   at(k, hi),
			Baselines: []Named{{"N=10", at(k, 10)}},
			RatioTo:   "N=10", Target: Target{Max: 1.2},
		})
	}
	var t strings.Builder
	t.WriteString("| N registered |")
	for _, k := range scaleKinds {
		t.WriteString(" " + k.label + " |")
	}
	t.WriteString("\n|---|" + strings.Repeat("---|", len(scaleKinds)) + "\n")
	for i, n := range ns {
		fmt.Fprintf(&t, "| %d |", n)
		for _, k := range scaleKinds {
			s := data[k.label][i]
			if len(s.Runs) == 0 {
				t.WriteString(" — |")
				continue
			}
			fmt.Fprintf(&t, " %s (%s) |", formatValue(s.Median(), "ns"), s.runsText())
		}
		t.WriteString("\n")
	}
	sec.Details = append(sec.Details, "One `Poll(ev, 0)` returning the one ready source, per N:\n\n"+t.String())
	for _, k := range scaleKinds {
		for i, why := range skips[k.label] {
			if why != "" {
				sec.Notes = append(sec.Notes, fmt.Sprintf("%s, N=%d: %s", k.label, ns[i], why))
			}
		}
	}
	sec.Charts = append(sec.Charts, Chart{
		File: "poll_scaling.png", Title: "Poll cost vs N registered",
		Draw: func(path string) error {
			var lines []series
			for _, k := range scaleKinds {
				s := series{name: k.label}
				for i, n := range ns {
					if v := data[k.label][i]; len(v.Runs) > 0 {
						s.x = append(s.x, float64(n))
						s.y = append(s.y, v.Median())
					}
				}
				lines = append(lines, s)
			}
			return lineChart(path, "Poll(ev, 0) with 1 ready among N registered", "N registered", "ns per Poll", true, true, lines)
		},
	})
	return sec, nil
}

func scaleFds(b *testing.B, backend string, n int) {
	raiseNofile(b, uint64(n))
	pairs := make([][2]int, 0, n/2)
	defer func() {
		for _, p := range pairs {
			unix.Close(p[0])
			unix.Close(p[1])
		}
	}()
	for range (n + 1) / 2 {
		fds, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_STREAM|unix.SOCK_NONBLOCK|unix.SOCK_CLOEXEC, 0)
		if err != nil {
			b.Fatalf("socketpair #%d: %v", len(pairs), err)
		}
		pairs = append(pairs, [2]int(fds))
	}
	p, err := poll.NewWithConfig(poll.Config{Backend: backend})
	if err != nil {
		b.Fatal(err)
	}
	defer p.Close()
	tok := 0
	for _, pr := range pairs {
		for _, fd := range pr {
			if tok == n {
				break
			}
			if err := p.Register(poll.Fd(fd), poll.Token(tok), poll.Readable, poll.Level); err != nil {
				b.Fatal(err)
			}
			tok++
		}
	}
	// Make the last registered descriptor readable by writing to its peer:
	// with n even that is last[1], with n odd last[0] (last[1] is spare).
	last := pairs[len(pairs)-1]
	want := poll.Token(tok - 1)
	writeTo := last[0]
	if n%2 == 1 {
		writeTo = last[1]
	}
	if _, err := unix.Write(writeTo, []byte{1}); err != nil {
		b.Fatal(err)
	}
	pollOne(b, p, want)
}

func scaleRegs(b *testing.B, n int) {
	p, err := poll.New()
	if err != nil {
		b.Fatal(err)
	}
	defer p.Close()
	for i := range n - 1 {
		reg, _ := poll.NewRegistration()
		defer reg.Close()
		if err := p.Register(reg, poll.Token(i), poll.Readable, poll.Edge); err != nil {
			b.Fatal(err)
		}
	}
	reg, set := poll.NewRegistration()
	defer reg.Close()
	want := poll.Token(n - 1)
	if err := p.Register(reg, want, poll.Readable, poll.Level); err != nil {
		b.Fatal(err)
	}
	if err := set.SetReadiness(poll.Readable); err != nil {
		b.Fatal(err)
	}
	pollOne(b, p, want)
}

// pollOne measures Poll(ev, 0), which must return exactly want.
func pollOne(b *testing.B, p *poll.Poll, want poll.Token) {
	ev := poll.NewEvents(64)
	if _, err := p.Poll(ev, 0); err != nil {
		b.Fatal(err)
	}
	cpu := testsupport.StartBench(b)
	for range b.N {
		n, err := p.Poll(ev, 0)
		if err != nil || n != 1 || ev.At(0).Token != want {
			b.Fatalf("Poll = %d, %v; want 1 event for token %d", n, err, want)
		}
	}
	b.StopTimer()
	cpu()
}
