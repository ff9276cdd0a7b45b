//go:build linux

package main

import (
	"math"
	"os"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func TestSampleMedianSpread(t *testing.T) {
	s := Sample{Runs: []float64{4, 1, 3}}
	require.Equal(t, 3.0, s.Median())
	require.InDelta(t, 0.5, s.Spread(), 1e-9) // (4-1)/2/3
	s.add(2)
	require.Equal(t, 2.5, s.Median())
	require.True(t, math.IsNaN(Sample{}.Median()))
	require.Equal(t, "4, ±60%", s.runsText())
}

// Paired ratios divide pass by pass: a machine that was twice as slow in
// the second round slows both contenders of that round, and the pairs see
// the same 2x where the two medians would mix the rounds.
func TestSamplePairedRatios(t *testing.T) {
	u := Sample{Runs: []float64{30, 15, 32, 16, 31}}   // rounds alternate fast, slow
	ref := Sample{Runs: []float64{20, 10, 20, 10, 20}} // the same machine, round by round
	q, ok := u.PairedRatios(ref)
	require.True(t, ok)
	require.InDeltaSlice(t, []float64{1.5, 1.5, 1.6, 1.6, 1.55}, q.Runs, 1e-9)
	require.InDelta(t, 1.55, q.Median(), 1e-9)
	require.InDelta(t, 30.0/20, u.Median()/ref.Median(), 1e-9) // medians from different rounds
	lo, hi := q.Quartiles()
	require.InDelta(t, 1.5, lo, 1e-9)
	require.InDelta(t, 1.6, hi, 1e-9)

	_, ok = u.PairedRatios(Sample{Runs: []float64{1, 2}})
	require.False(t, ok, "a contender that lost passes has no pairs")
	_, ok = Sample{}.PairedRatios(Sample{})
	require.False(t, ok)
}

// A Paired row's ratio cell says so and carries the pairs' quartiles; its
// verdict follows the paired median.
func TestRowPairedMarkdown(t *testing.T) {
	row := Row{What: "channel, 1 producer(s)", Unit: "M/s", Higher: true,
		Unipoll:   Sample{Runs: []float64{30, 15, 32, 16, 31}},
		Baselines: []Named{{"chan", Sample{Runs: []float64{20, 10, 20, 10, 20}}}},
		RatioTo:   "chan", Paired: true, Target: Target{Min: 1.55}}
	md := row.markdown()
	require.Contains(t, md, "1.55× chan (paired; quartiles 1.50–1.60)")
	require.Contains(t, md, "≥ 1.55× chan ✓")
	row.Paired = false
	require.Contains(t, row.markdown(), "| 1.50× chan |")
}

// A lower-quartile target is judged on the pairs' lower quartile, beside
// the median's: a row whose median passes but whose slow passes do not
// fails.
func TestRowLowerQuartileTarget(t *testing.T) {
	row := Row{What: "notification throughput", Unit: "M/s", Higher: true,
		Unipoll:   Sample{Runs: []float64{30, 15, 32, 16, 31}},
		Baselines: []Named{{"chan", Sample{Runs: []float64{20, 10, 20, 10, 20}}}},
		RatioTo:   "chan", Paired: true, Target: Target{Min: 1.5, LowMin: 1.5}}
	md := row.markdown()
	require.Contains(t, md, "quartiles 1.50–1.60")
	require.Contains(t, md, "≥ 1.5× chan, lower quartile ≥ 1.5× chan ✓")
	row.Target.LowMin = 1.55
	require.Contains(t, row.markdown(), "lower quartile ≥ 1.55× chan ✗", "the median passes, the lower quartile does not")
	row.Target = Target{LowMin: 1.4}
	require.Contains(t, row.markdown(), "| lower quartile ≥ 1.4× chan ✓ |")
}

func TestHistQuantiles(t *testing.T) {
	var h hist
	// 1..100,000 ns: every quantile must come back within the bucket
	// resolution (1/32 of the value).
	for v := int64(1); v <= 100000; v++ {
		h.record(v)
	}
	c := h.counts()
	for _, q := range []float64{0.5, 0.9, 0.99} {
		want := q * 100000
		require.InEpsilon(t, want, quantile(c, q), 1.0/32, "q=%v", q)
	}
	require.True(t, math.IsNaN(quantile(make([]uint64, histBuckets), 0.5)))
}

func TestHistIndexMonotonic(t *testing.T) {
	prev := -1
	for _, v := range []uint64{0, 1, 63, 64, 65, 127, 128, 1000, 1 << 20, 1<<40 + 7, math.MaxUint64} {
		i := histIndex(v)
		require.Less(t, i, histBuckets, "v=%d", v)
		require.GreaterOrEqual(t, i, prev, "v=%d", v)
		lo := histValue(i)
		require.InEpsilon(t, float64(max(v, 1)), max(lo, 1), 1.0/16, "v=%d", v)
		prev = i
	}
}

func TestParseStatCPU(t *testing.T) {
	// A command name with spaces and parentheses, as a process may choose.
	stat := "1234 (a (weird) name) S 1 1234 1234 0 -1 4194560 100 0 0 0 250 75 0 0 20 0 3 0 12345 0 0"
	d, err := parseStatCPU(stat)
	require.NoError(t, err)
	require.Equal(t, 325*clockTick, d)
	_, err = parseStatCPU("garbage")
	require.Error(t, err)

	self, err := procCPU(os.Getpid())
	require.NoError(t, err)
	require.GreaterOrEqual(t, self, time.Duration(0))
}

func TestParseStraceSummary(t *testing.T) {
	out := `% time     seconds  usecs/call     calls    errors syscall
------ ----------- ----------- --------- --------- ----------------
 55.00    0.000110           2        50        10 read
 40.00    0.000080           2        40           write
  5.00    0.000010           1        10           epoll_wait
------ ----------- ----------- --------- --------- ----------------
100.00    0.000200           2       100        10 total
`
	s, err := parseStraceSummary(out)
	require.NoError(t, err)
	require.Equal(t, uint64(100), s.Total)
	require.Equal(t, map[string]uint64{"read": 50, "write": 40, "epoll_wait": 10}, s.ByName)
	_, err = parseStraceSummary("strace: attach: ptrace(PTRACE_SEIZE, 1): Operation not permitted\n")
	require.Error(t, err)
}

func TestTargetVerdicts(t *testing.T) {
	row := Row{What: "x", Unit: "ns", Unipoll: Sample{Runs: []float64{100}},
		Baselines: []Named{{"floor", Sample{Runs: []float64{100}}}, {"peer", Sample{Runs: []float64{90}}}},
		RatioTo:   "floor", Target: Target{Max: 1.05, BelowPeers: true}}
	require.Contains(t, row.markdown(), "1.00× floor")
	require.Contains(t, row.markdown(), "✗", "a peer is below unipoll")
	row.Target.NotPeers = []string{"peer"}
	require.Contains(t, row.markdown(), "✓", "a floor below unipoll is no peer")
	row.Target.NotPeers = nil
	row.Baselines[1].Runs = []float64{110}
	require.Contains(t, row.markdown(), "✓")
	row.Target = Target{Max: 2.1, Abs: true}
	row.Unipoll.Runs = []float64{2.5}
	require.Contains(t, row.markdown(), "≤ 2.1 ✗")
}

func TestLookup(t *testing.T) {
	s, err := lookup("echo")
	require.NoError(t, err)
	require.Len(t, s, 1)
	all, err := lookup("")
	require.NoError(t, err)
	require.Equal(t, len(scenarios), len(all))
	for i := 1; i < len(all); i++ {
		require.LessOrEqual(t, all[i-1].Num, all[i].Num)
	}
	_, err = lookup("nonesuch")
	require.ErrorContains(t, err, "no scenario")
}
