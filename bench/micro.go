//go:build linux

package main

// In-process measurements (scenarios 1, 2, 3 and 5) are testing.B
// functions, run one per child process with testing.Benchmark: the runner
// alternates the contenders pass by pass, and each pass starts from a fresh
// process (heap, scheduler, descriptors), so one contender's garbage or
// threads never tax the next one.

import (
	"flag"
	"fmt"
	"maps"
	"slices"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// How long testing.Benchmark aims for in one pass.
const (
	microFull  = time.Second
	microQuick = 100 * time.Millisecond
)

// microCases maps a case name ("notify/unipoll") to its benchmark. The
// argument n is the case's size parameter (N registered, producers, ...).
var microCases = map[string]func(b *testing.B, n int){}

func microCase(name string, f func(b *testing.B, n int)) {
	if _, dup := microCases[name]; dup {
		panic("bench: micro case registered twice: " + name)
	}
	microCases[name] = f
}

// microResult is what a micro child reports.
type microResult struct {
	N     int
	NsOp  float64
	Extra map[string]float64
	Skip  string `json:",omitempty"`
}

func microMain(args []string) error {
	fs := flag.NewFlagSet("micro", flag.ContinueOnError)
	name := fs.String("case", "", "case name")
	n := fs.Int("n", 0, "size parameter")
	d := fs.Duration("dur", time.Second, "how long testing.Benchmark aims for")
	if err := fs.Parse(args); err != nil {
		return err
	}
	f, ok := microCases[*name]
	if !ok {
		return fmt.Errorf("no micro case %q (have %v)", *name, slices.Sorted(maps.Keys(microCases)))
	}
	testing.Init()
	if err := flag.CommandLine.Set("test.benchtime", d.String()); err != nil {
		return err
	}
	var skip string
	res := testing.Benchmark(func(b *testing.B) {
		defer func() {
			if b.Skipped() {
				skip = "skipped"
			}
		}()
		f(b, *n)
	})
	if res.N == 0 && skip == "" {
		return fmt.Errorf("case %s failed (see above)", *name)
	}
	if msg := microSkipReason; msg != "" {
		skip = msg
	}
	return report(microResult{N: res.N, NsOp: float64(res.T.Nanoseconds()) / float64(max(res.N, 1)), Extra: res.Extra, Skip: skip})
}

// microSkipReason is set by a case that skips, so the runner can print why.
var microSkipReason string

// skipf skips a micro case and records why.
func skipf(b *testing.B, format string, args ...any) {
	microSkipReason = fmt.Sprintf(format, args...)
	b.Skip(microSkipReason)
}

// micro runs one pass of a case in a fresh, unpinned child process, with
// env added to its environment.
func (r *Runner) micro(name string, n int, d time.Duration, env ...string) (microResult, error) {
	var res microResult
	err := r.child(-1, env, 10*d+2*time.Minute, &res, "micro", "-case", name, "-n", fmt.Sprint(n), "-dur", d.String())
	return res, err
}

// contender is one side of an in-process comparison.
type contender struct {
	label string // the name in the table
	cse   string // micro case
	n     int
	env   []string
}

// withVariants adds, after the contender labelled "unipoll", one contender
// per -variant: the same case with the variant's environment.
func (r *Runner) withVariants(cs []contender) []contender {
	var out []contender
	for _, c := range cs {
		out = append(out, c)
		if c.label == "unipoll" {
			for _, v := range r.o.variants {
				if v.lib == "" { // another checkout's code is not in this binary
					out = append(out, contender{label: v.name, cse: c.cse, n: c.n, env: v.env})
				}
			}
		}
	}
	return out
}

// variantSamples returns each -variant's figures, to show beside the
// baselines.
func (r *Runner) variantSamples(get func(label string) Sample) []Named {
	var out []Named
	for _, v := range r.o.variants {
		if v.lib == "" {
			out = append(out, Named{v.name, get(v.name)})
		}
	}
	return out
}

// alternate runs passes of every contender, A B C A B C, and returns each
// one's results in order. A contender that skips is reported once, with its
// reason, and not run again.
func (r *Runner) alternate(passes int, d time.Duration, cs []contender) (map[string][]microResult, map[string]string, error) {
	cs = r.withVariants(cs)
	out := map[string][]microResult{}
	skipped := map[string]string{}
	for pass := range passes {
		for _, c := range cs {
			if _, s := skipped[c.label]; s {
				continue
			}
			res, err := r.micro(c.cse, c.n, d, c.env...)
			if err != nil {
				return nil, nil, err
			}
			if res.Skip != "" {
				skipped[c.label] = res.Skip
				r.logf("  %s: skipped: %s", c.label, res.Skip)
				continue
			}
			out[c.label] = append(out[c.label], res)
			r.logf("  pass %d/%d %-28s %s/op %v", pass+1, passes, c.label, formatDuration(time.Duration(res.NsOp)), compact(res.Extra))
		}
	}
	return out, skipped, nil
}

// metric collects one figure from every pass of a contender: "ns/op" for
// the time per op, or an Extra metric's name.
func metric(rs []microResult, name string) Sample {
	var s Sample
	for _, r := range rs {
		if name == "ns/op" {
			s.add(r.NsOp)
			continue
		}
		if v, ok := r.Extra[name]; ok {
			s.add(v)
		}
	}
	return s
}

// perSecond turns a Sample of ns/op into millions of ops per second.
func perSecond(s Sample) Sample {
	var out Sample
	for _, v := range s.Runs {
		out.add(1e3 / v)
	}
	return out
}

func compact(m map[string]float64) string {
	var s []string
	for _, k := range slices.Sorted(maps.Keys(m)) {
		s = append(s, fmt.Sprintf("%s=%.3g", k, m[k]))
	}
	return fmt.Sprint(s)
}

// ---------------------------------------------------------------------------
// Helpers for the cases

// raiseNofile raises the soft descriptor limit to the hard one and skips
// the case, saying why, when that is still fewer than need.
func raiseNofile(b *testing.B, need uint64) {
	var rl unix.Rlimit
	if err := unix.Getrlimit(unix.RLIMIT_NOFILE, &rl); err != nil {
		skipf(b, "getrlimit: %v", err)
	}
	if rl.Cur < rl.Max {
		rl.Cur = rl.Max
		_ = unix.Setrlimit(unix.RLIMIT_NOFILE, &rl)
	}
	if rl.Max < need+256 {
		skipf(b, "needs %d descriptors, RLIMIT_NOFILE hard limit is %d", need, rl.Max)
	}
}
