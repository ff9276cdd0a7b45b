//go:build unix

package signal

import (
	"os"
	"testing"

	"github.com/unipoll/unipoll/internal/testsupport"
)

// helperEnv names the helper a re-executed test binary runs instead of the
// tests (process_test.go): some properties can only be seen from outside a
// process, such as a signal's default action ending it.
const helperEnv = "UNIPOLL_SIGNAL_HELPER"

// TestMain runs a helper when asked to, and otherwise the tests, failing
// them if a goroutine is left running when they finish: the relay must
// leave with the last Watcher.
func TestMain(m *testing.M) { testsupport.MainWithHelper(m, helperEnv, os.Stderr, runHelper) }
