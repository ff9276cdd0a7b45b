//go:build linux

package child

import (
	"os"
	"testing"

	"github.com/unipoll/unipoll/internal/testsupport"
)

// helperEnv names the helper a re-executed test binary runs instead of the
// tests (sigign_test.go): a process that ignores SIGCHLD cannot be undone,
// so it is a separate one.
const helperEnv = "UNIPOLL_CHILD_HELPER"

// TestMain runs a helper when asked to, and otherwise the tests, failing
// them if a goroutine is left running when they finish: the SIGCHLD relay
// must leave with the last fallback Watcher.
func TestMain(m *testing.M) { testsupport.MainWithHelper(m, helperEnv, os.Stdout, runHelper) }
