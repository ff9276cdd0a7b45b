package testsupport

import (
	"maps"
	"os"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// fdDir lists the calling process's open descriptors: /proc/self/fd on
// Linux, /dev/fd on darwin and the BSDs (with fdescfs mounted).
func fdDir() string {
	if runtime.GOOS == "linux" {
		return "/proc/self/fd"
	}
	return "/dev/fd"
}

// OpenFds counts the process's open descriptors. It skips the test, saying
// why, where the system does not list them (no such directory), and fails
// it if the list cannot be read.
func OpenFds(t testing.TB) int {
	t.Helper()
	ents, err := os.ReadDir(fdDir())
	if os.IsNotExist(err) {
		t.Skipf("cannot count open descriptors: %v", err)
	}
	require.NoError(t, err, "listing open descriptors")
	return len(ents)
}

// OpenFdsNow counts the process's open descriptors, or returns -1 where
// they cannot be counted; for TestMain, which has no test to fail or skip.
func OpenFdsNow() int {
	ents, err := os.ReadDir(fdDir())
	if err != nil {
		return -1
	}
	return len(ents)
}

// AnonFds counts the process's descriptors on anonymous inodes by kind
// ("anon_inode:[pidfd]", "[eventpoll]", "[eventfd]", ...): what a Poll and
// the sources on it open. Leak tests compare these rather than the total,
// because under -race something else in the process (the sanitizer
// runtime's pipes for an external symbolizer, it seems) once opened a pipe
// at descriptor 251 and /dev/null mid-test and kept them. It skips the
// test where /proc/self/fd does not exist.
func AnonFds(t testing.TB) map[string]int {
	t.Helper()
	ents, err := os.ReadDir("/proc/self/fd")
	if os.IsNotExist(err) {
		t.Skip("no /proc/self/fd on this system: cannot tell descriptors apart")
	}
	require.NoError(t, err)
	kinds := map[string]int{}
	for _, e := range ents {
		target, err := os.Readlink("/proc/self/fd/" + e.Name())
		if err == nil && strings.HasPrefix(target, "anon_inode:") {
			kinds[target]++
		}
	}
	return kinds
}

// RequireAnonFdsBack fails the test unless AnonFds comes back to before
// within d (a descriptor closed by a finalizer may take a moment).
func RequireAnonFdsBack(t testing.TB, before map[string]int, d time.Duration) {
	t.Helper()
	Eventually(d, func() bool { return maps.Equal(before, AnonFds(t)) })
	require.Equal(t, before, AnonFds(t), "descriptors on anonymous inodes (pidfds, epoll instances, eventfds) before and after")
}

// RequireRoundLeavesNoAnonFds runs round twice and fails the test unless
// the second leaves AnonFds as it found them (within d). The first round
// is there because the Go runtime opens descriptors of its own lazily (its
// netpoller's epoll and eventfd, at the first timer or pollable file): it
// makes sure they exist before the baseline is taken.
func RequireRoundLeavesNoAnonFds(t testing.TB, d time.Duration, round func()) {
	t.Helper()
	round()
	before := AnonFds(t)
	round()
	RequireAnonFdsBack(t, before, d)
}
