package testsupport

import (
	"os"
	"runtime"
	"testing"

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
