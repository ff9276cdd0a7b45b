//go:build linux

package main

// The scenario registry: each scenario is one file that calls register from
// its init function, so a scenario for a part of the library that lands
// later is one file to add. A scenario registered with Pending set (and no
// Run) is listed as not built yet, with what it waits for. The runner runs
// them in the order of their numbers.

import (
	"fmt"
	"slices"
	"strings"
)

// Scenario is one comparison the runner can make.
type Scenario struct {
	Num     int    // its number in issue 14's list; the table's order
	Name    string // what -only takes
	Title   string
	Pending string // non-empty: not built yet, and what it waits for
	Run     func(r *Runner) (*Section, error)
}

// Section is what a scenario reports: rows for the summary table, detail
// tables and notes under its own heading, and charts.
type Section struct {
	Title   string
	Rows    []Row
	Details []string // Markdown blocks, printed under the summary
	Notes   []string
	Charts  []Chart
}

// Row is one line of the summary table: one figure of unipoll against its
// baselines.
type Row struct {
	What      string  // scenario and case, e.g. "notify, 1 producer"
	Unit      string  // "ns", "µs/msg", "M/s", ...
	Higher    bool    // higher is better (throughput); else lower is
	Unipoll   Sample  // unipoll's runs
	Baselines []Named // each baseline's runs, in a fixed order
	RatioTo   string  // the baseline the ratio is taken against
	// Paired takes the ratio as the median of pass-by-pass ratios rather
	// than the ratio of the two medians: for in-process figures on a
	// machine whose speed drifts from minute to minute, where a pass and
	// the baseline's pass run next to it see the same machine, and two
	// medians may come from different moods of it.
	Paired bool
	Target Target
}

// Named is a baseline's name with its runs.
type Named struct {
	Name string
	Sample
}

// Target is a row's goal, as a ratio of unipoll to RatioTo: at least Min
// (Higher rows) or at most Max (lower-is-better rows); with Abs, a bound on
// unipoll's own figure; with BelowPeers, also below every other baseline.
// LowMin, on a Paired row, is a floor for the lower quartile of the
// pass-by-pass ratios: a bound that the machine's slow passes must meet
// too, not only its median ones. Zero means none.
type Target struct {
	Min, Max   float64
	LowMin     float64
	Abs        bool
	BelowPeers bool
	NotPeers   []string // baselines BelowPeers leaves out besides RatioTo (floors)
	Text       string   // overrides the generated text
}

// Chart is a picture a scenario can draw from its own results.
type Chart struct {
	File  string // base name under the charts directory
	Title string
	Draw  func(path string) error
}

var scenarios []Scenario

func register(s Scenario) {
	for _, o := range scenarios {
		if o.Name == s.Name || o.Num == s.Num && s.Pending == "" && o.Pending == "" {
			panic(fmt.Sprintf("bench: scenario %q registered twice", s.Name))
		}
	}
	scenarios = append(scenarios, s)
	slices.SortStableFunc(scenarios, func(a, b Scenario) int { return a.Num - b.Num })
}

// lookup returns the scenarios -only selects: an exact name, or every
// scenario whose name starts with it.
func lookup(only string) ([]Scenario, error) {
	if only == "" {
		return scenarios, nil
	}
	var out []Scenario
	for _, s := range scenarios {
		if s.Name == only {
			return []Scenario{s}, nil
		}
		if strings.HasPrefix(s.Name, only) {
			out = append(out, s)
		}
	}
	if len(out) == 0 {
		var names []string
		for _, s := range scenarios {
			names = append(names, s.Name)
		}
		return nil, fmt.Errorf("no scenario %q (have %s)", only, strings.Join(names, ", "))
	}
	return out, nil
}
