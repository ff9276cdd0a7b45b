//go:build linux

package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// writeResults writes a full run's report to r.o.results, with the charts
// in charts/ beside it, embedded under the table.
func (r *Runner) writeResults(report string, sections []*Section) error {
	dir := filepath.Join(filepath.Dir(r.o.results), "charts")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	var b strings.Builder
	b.WriteString("# unipoll benchmark results\n\n")
	b.WriteString("Written by `go run .` in `bench/` (a full run); see README.md there for what each scenario measures and how. Read the ratios, not the absolute numbers: the machine is small and shared. Where a target is missed, GAPS.md says what the profiles show and what is left of the gap.\n\n")
	b.WriteString(report)
	var charts []string
	for _, s := range sections {
		for _, c := range s.Charts {
			path := filepath.Join(dir, c.File)
			if err := c.Draw(path); err != nil {
				return fmt.Errorf("chart %s: %w", c.File, err)
			}
			charts = append(charts, fmt.Sprintf("### %s\n\n![%s](charts/%s)\n", c.Title, c.Title, c.File))
		}
	}
	if len(charts) > 0 {
		b.WriteString("\n## Charts\n\n")
		b.WriteString(strings.Join(charts, "\n"))
	}
	r.logf("wrote %s and %d charts in %s", r.o.results, len(charts), dir)
	return os.WriteFile(r.o.results, []byte(b.String()), 0o644)
}
