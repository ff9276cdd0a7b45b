package testsupport

import (
	"fmt"
	"io"
	"os"
	"testing"

	"go.uber.org/goleak"
)

// MainWithHelper is the TestMain of a package whose tests re-execute the
// test binary to run a helper in a process of its own: with the
// environment variable env set, it runs the helper env names (run), prints
// its error to out and exits 3 on one, 0 otherwise; without, it runs the
// tests and fails them if a goroutine is left running when they finish
// (goleak).
func MainWithHelper(m *testing.M, env string, out io.Writer, run func(name string) error) {
	if name := os.Getenv(env); name != "" {
		if err := run(name); err != nil {
			fmt.Fprintln(out, "helper:", err)
			os.Exit(3)
		}
		os.Exit(0)
	}
	goleak.VerifyTestMain(m)
}
