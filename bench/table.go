//go:build linux

package main

import (
	"fmt"
	"math"
	"slices"
	"strings"
	"time"
)

// markdown is the whole report: how the machine was used, the summary
// table, then each scenario's details.
func (r *Runner) markdown(sections []*Section, missing []Scenario) string {
	var b strings.Builder
	fmt.Fprintf(&b, "## unipoll bench, %s\n\n", r.started.UTC().Format("2006-01-02 15:04 UTC"))
	fmt.Fprintf(&b, "- machine: %s\n", r.m)
	fmt.Fprintf(&b, "- cores: %s\n", r.coresText())
	fmt.Fprintf(&b, "- command: `%s` (in `bench/`)\n", r.command())
	if r.o.quick {
		b.WriteString("- `-quick`: one short pass each; the figures show that everything runs, not how fast\n")
	}
	b.WriteString("\n| scenario | unipoll | baselines | ratio | target | runs, spread |\n|---|---|---|---|---|---|\n")
	for _, s := range sections {
		for _, row := range s.Rows {
			b.WriteString(row.markdown())
		}
	}
	for _, s := range missing {
		fmt.Fprintf(&b, "| %s | not built yet: %s | | | | |\n", s.Title, s.Pending)
	}
	b.WriteString("\nRatios are of medians (unless paired), unipoll over the named baseline: above 1 is faster for rates (↑), slower or costlier for times and costs (↓). A paired ratio is the median of pass-by-pass ratios, each pass against the baseline's pass run next to it, with their quartiles. Spread is half the range of the passes around the median.\n")
	for _, s := range sections {
		if len(s.Details) == 0 && len(s.Notes) == 0 {
			continue
		}
		fmt.Fprintf(&b, "\n### %s\n\n", s.Title)
		for _, d := range s.Details {
			b.WriteString(d)
			b.WriteString("\n")
		}
		for _, n := range s.Notes {
			fmt.Fprintf(&b, "- %s\n", n)
		}
	}
	return b.String()
}

// coresText says how the processes shared the cores.
func (r *Runner) coresText() string {
	s := "in-process measurements run unpinned on every CPU; "
	if r.m.canPin() {
		s += fmt.Sprintf("echo servers pinned to CPU %d and the load generator to CPU %d with taskset (unpinned rows say so)", r.m.serverCPU(), r.m.loadCPU())
	} else {
		s += "echo servers and load generator unpinned (pinning needs taskset and two CPUs)"
	}
	return s + "; " + r.m.sharing()
}

func (row Row) markdown() string {
	dir := "↓"
	if row.Higher {
		dir = "↑"
	}
	u := row.Unipoll.Median()
	var bl []string
	var ref float64 = math.NaN()
	var refRuns Sample
	for _, n := range row.Baselines {
		bl = append(bl, fmt.Sprintf("%s %s", n.Name, formatValue(n.Median(), row.Unit)))
		if n.Name == row.RatioTo {
			ref, refRuns = n.Median(), n.Sample
		}
	}
	ratio, verdict := "", ""
	if row.RatioTo != "" && !math.IsNaN(ref) && ref != 0 && !math.IsNaN(u) {
		q := u / ref
		ratio = fmt.Sprintf("%.2f× %s", q, row.RatioTo)
		if pairs, ok := row.Unipoll.PairedRatios(refRuns); ok && row.Paired {
			q = pairs.Median()
			lo, hi := pairs.Quartiles()
			ratio = fmt.Sprintf("%.2f× %s (paired; quartiles %.2f–%.2f)", q, row.RatioTo, lo, hi)
			verdict = row.Target.verdict(q)
			if row.Target.LowMin > 0 {
				if low := (Target{Min: row.Target.LowMin}).verdict(lo); verdict == "" || low == "✗" {
					verdict = low
				}
			}
		} else {
			verdict = row.Target.verdict(q)
		}
	}
	if row.Target.Abs {
		verdict = row.Target.verdict(u)
	}
	target := row.Target.text(row.RatioTo)
	if row.Target.BelowPeers {
		target += ", below every peer"
		for _, n := range row.Baselines {
			if n.Name != row.RatioTo && !slices.Contains(row.Target.NotPeers, n.Name) && len(n.Runs) > 0 && !(u < n.Median()) {
				verdict = "✗"
			}
		}
	}
	if verdict != "" {
		target += " " + verdict
	}
	return fmt.Sprintf("| %s %s | %s | %s | %s | %s | %s |\n", row.What, dir,
		formatValue(u, row.Unit), strings.Join(bl, "; "), ratio, target, row.Unipoll.runsText())
}

func (t Target) text(ref string) string {
	if t.LowMin > 0 && t.Text == "" {
		low := fmt.Sprintf("lower quartile ≥ %g× %s", t.LowMin, ref)
		if rest := (Target{Min: t.Min, Max: t.Max}).text(ref); rest != "" {
			return rest + ", " + low
		}
		return low
	}
	switch {
	case t.Text != "":
		return t.Text
	case t.Abs && t.Max > 0:
		return fmt.Sprintf("≤ %g", t.Max)
	case t.Min > 0:
		return fmt.Sprintf("≥ %g× %s", t.Min, ref)
	case t.Max > 0:
		return fmt.Sprintf("≤ %g× %s", t.Max, ref)
	}
	return ""
}

func (t Target) verdict(q float64) string {
	switch {
	case math.IsNaN(q):
		return ""
	case t.Min > 0 && q >= t.Min, t.Max > 0 && q <= t.Max:
		return "✓"
	case t.Min > 0 || t.Max > 0:
		return "✗"
	}
	return ""
}

// formatValue prints v in unit with three significant digits.
func formatValue(v float64, unit string) string {
	if math.IsNaN(v) {
		return "—"
	}
	switch unit {
	case "ns":
		return formatDuration(time.Duration(v))
	case "µs":
		return formatDuration(time.Duration(v * 1e3))
	}
	if unit == "" {
		return sig3(v)
	}
	return sig3(v) + " " + unit
}

func formatDuration(d time.Duration) string {
	switch {
	case d < time.Microsecond:
		return sig3(float64(d)) + " ns"
	case d < time.Millisecond:
		return sig3(float64(d)/1e3) + " µs"
	case d < time.Second:
		return sig3(float64(d)/1e6) + " ms"
	}
	return sig3(d.Seconds()) + " s"
}

func sig3(v float64) string {
	a := math.Abs(v)
	switch {
	case a >= 100:
		return fmt.Sprintf("%.0f", v)
	case a >= 10:
		return fmt.Sprintf("%.1f", v)
	case a >= 1:
		return fmt.Sprintf("%.2f", v)
	}
	return fmt.Sprintf("%.3g", v)
}
