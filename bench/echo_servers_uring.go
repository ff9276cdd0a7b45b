//go:build linux

package main

// The C io_uring floor: floor/echo_uring.c, beside the C epoll floor of
// echo_servers.go. It needs liburing's header and library at build time;
// where they are missing it is skipped, saying how to install them.

import (
	"fmt"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
)

func init() {
	registerEcho(echoServer{
		Name:  "c-uring-floor",
		About: "floor/echo_uring.c: C, io_uring with liburing, multishot accept and receive into a provided buffer ring, sends submitted with the next wait",
		Prepare: func(r *Runner) (func(cpu, port int) *exec.Cmd, error) {
			return prepareUringFloor(r, "echo_uring")
		},
	})
}

// prepareUringFloor builds floor/echo_uring.c with cc and liburing as name
// in r.buildDir; ccArgs go to cc before the source (the tests' -D sizes).
func prepareUringFloor(r *Runner, name string, ccArgs ...string) (func(cpu, port int) *exec.Cmd, error) {
	cc, err := exec.LookPath("cc")
	if err != nil {
		return nil, fmt.Errorf("%w: no C compiler (cc) on PATH; install one (apt-get install -y gcc) to measure the io_uring floor", errSkip)
	}
	bin := filepath.Join(r.buildDir, name)
	args := append(append([]string{"-O2", "-o", bin}, ccArgs...), "floor/echo_uring.c", "-luring")
	if err := build(".", cc, args...); err != nil {
		if missingLiburing(err.Error()) {
			return nil, fmt.Errorf("%w: liburing's header or library is missing; install them (apt-get install -y liburing-dev) to measure the io_uring floor", errSkip)
		}
		return nil, err
	}
	return func(cpu, port int) *exec.Cmd { return pinned(cpu, bin, strconv.Itoa(port)) }, nil
}

// missingLiburing tells from the compiler's output whether the build
// failed for want of liburing (gcc and clang word it alike), rather than
// for a fault in the source.
func missingLiburing(out string) bool {
	return strings.Contains(out, "liburing.h: No such file") ||
		strings.Contains(out, "'liburing.h' file not found") ||
		strings.Contains(out, "cannot find -luring") ||
		strings.Contains(out, "library not found for -luring")
}
