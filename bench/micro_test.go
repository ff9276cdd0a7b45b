//go:build linux

package main

import (
	"maps"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// TestMicroCases runs every in-process case once, briefly, in a child
// process as the runner does, and checks that it reports a time and the
// metrics its scenario reads.
func TestMicroCases(t *testing.T) {
	r := testRunner(t)
	want := map[string][]string{
		"notify/unipoll":  {"events/op", "wakes/op", "cpu-ns/op"},
		"wake/unipoll":    {"median-ns", "p99-ns"},
		"channel/unipoll": {"polls/op", "wakes/op"},
		"dial/unipoll":    {"cpu-ns/op", "allocs/op"},
		"dial/net":        {"cpu-ns/op", "allocs/op"},
	}
	for _, name := range slices.Sorted(maps.Keys(microCases)) {
		t.Run(name, func(t *testing.T) {
			res, err := r.micro(name, 10, 20*time.Millisecond)
			require.NoError(t, err)
			require.Empty(t, res.Skip)
			require.Positive(t, res.N)
			require.Positive(t, res.NsOp)
			for _, m := range want[name] {
				require.Contains(t, res.Extra, m)
			}
		})
	}
}

// TestMicroSkip checks that a case that cannot run says why instead of
// failing: the descriptor scaling case past the hard descriptor limit.
func TestMicroSkip(t *testing.T) {
	r := testRunner(t)
	res, err := r.micro("scaling/fd-epoll", 10_000_000, 20*time.Millisecond)
	require.NoError(t, err)
	require.Contains(t, res.Skip, "RLIMIT_NOFILE")
}
