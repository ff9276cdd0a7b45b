package poll

import (
	"testing"

	"go.uber.org/goleak"
)

// TestMain fails the package's tests if any goroutine is still running when
// they finish: a Poll, Registration or test helper that leaks one is a bug.
// This is the only TestMain in package poll.
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}
