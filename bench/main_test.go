//go:build linux

package main

import (
	"os"
	"testing"

	"go.uber.org/goleak"
)

// childEnv makes the test binary behave as the bench command, so that
// tests can start it in a role (server, load, micro) as the runner starts
// its own binary.
const childEnv = "UNIPOLL_BENCH_AS_COMMAND"

func TestMain(m *testing.M) {
	if os.Getenv(childEnv) == "1" {
		main()
		os.Exit(0)
	}
	os.Setenv(childEnv, "1") // inherited by every child a test starts
	// The peers' packages start goroutines of their own at init (gnet's
	// worker pool, netpoll's pollers): not ours to check.
	goleak.VerifyTestMain(m, goleak.IgnoreCurrent())
}

// testRunner is a Runner whose children are this test binary.
func testRunner(t *testing.T) *Runner {
	return &Runner{o: options{quick: true, lib: ".."}, m: probeMachine(), self: os.Args[0], buildDir: t.TempDir()}
}
