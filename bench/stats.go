//go:build linux

package main

import (
	"fmt"
	"math"
	"math/bits"
	"slices"
	"sync/atomic"
)

// Sample is the figures one contender got in the passes of a measurement.
type Sample struct {
	Runs []float64
}

func (s *Sample) add(v float64) { s.Runs = append(s.Runs, v) }

// Median is the middle pass (the mean of the two middle ones for an even
// count); NaN with no passes.
func (s Sample) Median() float64 {
	if len(s.Runs) == 0 {
		return math.NaN()
	}
	v := slices.Clone(s.Runs)
	slices.Sort(v)
	n := len(v)
	if n%2 == 1 {
		return v[n/2]
	}
	return (v[n/2-1] + v[n/2]) / 2
}

// Spread is half the range of the passes relative to the median, as a
// fraction (0.03 is ±3%).
func (s Sample) Spread() float64 {
	if len(s.Runs) < 2 {
		return 0
	}
	lo, hi := slices.Min(s.Runs), slices.Max(s.Runs)
	m := s.Median()
	if m == 0 {
		return 0
	}
	return (hi - lo) / 2 / math.Abs(m)
}

// PairedRatios divides s's passes by ref's, pass by pass: the ratios of
// passes that ran next to each other in an alternation (Runner.alternate
// runs every contender once per round). It reports false unless both have
// the same number of passes, at least one.
func (s Sample) PairedRatios(ref Sample) (Sample, bool) {
	if len(s.Runs) == 0 || len(s.Runs) != len(ref.Runs) {
		return Sample{}, false
	}
	var q Sample
	for i, v := range s.Runs {
		q.add(v / ref.Runs[i])
	}
	return q, true
}

// Quartiles are the medians of the lower and upper halves of the passes
// (the middle pass, for an odd count, in neither).
func (s Sample) Quartiles() (lo, hi float64) {
	v := slices.Clone(s.Runs)
	slices.Sort(v)
	n := len(v)
	if n < 2 {
		m := s.Median()
		return m, m
	}
	return Sample{Runs: v[:n/2]}.Median(), Sample{Runs: v[(n+1)/2:]}.Median()
}

// runsText is the table's "runs, spread" cell.
func (s Sample) runsText() string {
	if len(s.Runs) < 2 {
		return fmt.Sprintf("%d", len(s.Runs))
	}
	return fmt.Sprintf("%d, ±%.0f%%", len(s.Runs), 100*s.Spread())
}

// ---------------------------------------------------------------------------
// Latency histogram

// hist is a log-linear histogram of nanosecond values: exact below 64, and
// 32 buckets per power of two above, so any value is known to about 3%.
// Its buckets are atomic, so any number of goroutines record into one.
type hist struct {
	b [histBuckets]atomic.Uint64
}

const (
	histSub     = 32
	histBuckets = 2*histSub + 58*histSub
)

func histIndex(v uint64) int {
	if v < 2*histSub {
		return int(v)
	}
	shift := bits.Len64(v) - 6 // v>>shift is in [32, 63]
	return 2*histSub + (shift-1)*histSub + int(v>>shift) - histSub
}

// histValue is the middle of bucket i.
func histValue(i int) float64 {
	if i < 2*histSub {
		return float64(i)
	}
	i -= 2 * histSub
	shift := i/histSub + 1
	m := uint64(i%histSub + histSub)
	lo := m << shift
	return float64(lo) + float64(uint64(1)<<shift)/2
}

func (h *hist) record(ns int64) {
	if ns < 0 {
		ns = 0
	}
	h.b[histIndex(uint64(ns))].Add(1)
}

// counts copies the buckets.
func (h *hist) counts() []uint64 {
	out := make([]uint64, histBuckets)
	for i := range h.b {
		out[i] = h.b[i].Load()
	}
	return out
}

// quantile returns the q-quantile (0 < q < 1) of bucket counts, in ns; NaN
// when empty.
func quantile(counts []uint64, q float64) float64 {
	var total uint64
	for _, c := range counts {
		total += c
	}
	if total == 0 {
		return math.NaN()
	}
	rank := uint64(math.Ceil(q * float64(total)))
	if rank == 0 {
		rank = 1
	}
	var seen uint64
	for i, c := range counts {
		seen += c
		if seen >= rank {
			return histValue(i)
		}
	}
	return histValue(len(counts) - 1)
}
