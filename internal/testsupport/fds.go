package testsupport

import (
	"os"
	"testing"

	"github.com/stretchr/testify/require"
)

// procFds lists the calling process's open descriptors on Linux.
const procFds = "/proc/self/fd"

// OpenFds counts the process's open descriptors. It skips the test, saying
// why, where the system does not list them (no /proc/self/fd).
func OpenFds(t testing.TB) int {
	t.Helper()
	ents, err := os.ReadDir(procFds)
	if os.IsNotExist(err) {
		t.Skip("no " + procFds + " to count open descriptors")
	}
	require.NoError(t, err)
	return len(ents)
}

// OpenFdsNow counts the process's open descriptors, or returns -1 where
// they cannot be counted; for TestMain, which has no test to fail or skip.
func OpenFdsNow() int {
	ents, err := os.ReadDir(procFds)
	if err != nil {
		return -1
	}
	return len(ents)
}
