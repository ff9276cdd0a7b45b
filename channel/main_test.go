package channel

import (
	"testing"

	"go.uber.org/goleak"
)

// TestMain fails the package's tests if a goroutine is still running when
// they finish: a blocked Send that Close did not wake, or a test helper
// that leaks one, is a bug.
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}
