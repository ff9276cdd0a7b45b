//go:build linux

package main

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"time"
)

// Runner is the state one run of the suite shares between scenarios.
type Runner struct {
	o        options
	m        machine
	self     string // this binary, re-executed for every child
	buildDir string // where built helpers go
	started  time.Time
}

// passes is how many alternating passes a measurement makes: n for a full
// run (or -runs), 1 with -quick.
func (r *Runner) passes(n int) int {
	switch {
	case r.o.runs > 0:
		return r.o.runs
	case r.o.quick:
		return 1
	}
	return n
}

// dur picks the full or the quick length of a measurement.
func (r *Runner) dur(full, quick time.Duration) time.Duration {
	if r.o.quick {
		return quick
	}
	return full
}

// full reports whether this is a full run, the kind RESULTS.md records.
func (r *Runner) full() bool { return !r.o.quick && r.o.only == "" }

// logf reports progress on standard error; the tables go to standard output.
func (r *Runner) logf(format string, args ...any) {
	fmt.Fprintf(os.Stderr, "[%4.0fs] %s\n", time.Since(r.started).Seconds(), fmt.Sprintf(format, args...))
}

func run(o options) error {
	sel, err := lookup(o.only)
	if err != nil {
		return err
	}
	self, err := os.Executable()
	if err != nil {
		return err
	}
	// A directory of this run's own: two runs on one machine (two
	// sessions, or a run beside CI's) would otherwise build their servers
	// over each other's binaries while the other runs them.
	dir, err := os.MkdirTemp("", "unipoll-bench-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	r := &Runner{o: o, m: probeMachine(), self: self, buildDir: dir, started: time.Now()}
	r.logf("machine: %s; %s", r.m, r.m.sharing())

	var sections []*Section
	var missing []Scenario
	for _, s := range sel {
		if s.Pending != "" {
			r.logf("%s: not built yet (%s)", s.Name, s.Pending)
			missing = append(missing, s)
			continue
		}
		r.logf("%s: %s", s.Name, s.Title)
		sec, err := s.Run(r)
		if err != nil {
			return fmt.Errorf("%s: %w", s.Name, err)
		}
		sections = append(sections, sec)
	}
	report := r.markdown(sections, missing)
	fmt.Print(report)
	if r.full() && o.results != "" {
		return r.writeResults(report, sections)
	}
	return nil
}

// command is how this run was started, for the report.
func (r *Runner) command() string {
	return strings.Join(append([]string{"go", "run", "."}, os.Args[1:]...), " ")
}

// build runs a build command in dir and returns its output on failure.
func build(dir string, name string, args ...string) error {
	cmd := exec.Command(name, args...)
	cmd.Dir = dir
	out, err := cmd.CombinedOutput()
	if err != nil {
		return fmt.Errorf("%s %s: %v\n%s", name, strings.Join(args, " "), err, out)
	}
	return nil
}

// errSkip marks a contender that cannot run on this machine; the reason is
// printed in its place.
var errSkip = errors.New("skipped")
