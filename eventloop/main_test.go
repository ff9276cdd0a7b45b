package eventloop

import (
	"testing"

	"go.uber.org/goleak"
)

// TestMain fails the package's tests if a goroutine is left running: a
// worker that Shutdown did not stop, or a Run nobody waited for, is a bug.
func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }
