package netloop

import (
	"testing"

	"go.uber.org/goleak"
)

// TestMain fails the package's tests if a goroutine is left running: a
// Loop's worker, a Group's Run or a client nobody waited for is a bug.
func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }
