//go:build linux

package main

// The C io_uring floor: floor/echo_uring.c, beside the C epoll floor of
// echo_servers.go. It needs liburing's header and library at build time
// and a kernel that gives it a ring; where either is missing it is
// skipped, saying why (and how to install liburing).

import (
	"fmt"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
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

// echoFloors are the echo servers that measure what the kernel costs, not
// peers: an echo target's "below every peer" leaves them out (a library
// on epoll is not asked to beat the io_uring floor, nor gain, the Go peer
// on io_uring: echoUringPeers).
var echoFloors = []string{"c-floor", "c-uring-floor"}

// prepareUringFloor builds floor/echo_uring.c with cc and liburing as name
// in r.buildDir; ccArgs go to cc before the source (the tests' -D sizes).
// A probe (floor/uring_probe.c) built and run first tells what this
// machine lacks, liburing or a kernel that gives out rings, which is a
// skip, from a fault in the floor's source, which is an error.
func prepareUringFloor(r *Runner, name string, ccArgs ...string) (func(cpu, port int) *exec.Cmd, error) {
	cc, err := exec.LookPath("cc")
	if err != nil {
		return nil, fmt.Errorf("%w: no C compiler (cc) on PATH; install one (apt-get install -y gcc) to measure the io_uring floor", errSkip)
	}
	probe := filepath.Join(r.buildDir, name+"_probe")
	if err := build(".", cc, slices.Concat(ccArgs, []string{"-o", probe, "floor/uring_probe.c", "-luring"})...); err != nil {
		return nil, fmt.Errorf("%w: liburing's header or library is missing; install them (apt-get install -y liburing-dev) to measure the io_uring floor: %v", errSkip, err)
	}
	if out, err := exec.Command(probe).CombinedOutput(); err != nil {
		return nil, fmt.Errorf("%w: this kernel gives no io_uring with a provided buffer ring (Linux 5.19 or later, not disabled by kernel.io_uring_disabled or seccomp): %v: %s", errSkip, err, out)
	}
	bin := filepath.Join(r.buildDir, name)
	if err := build(".", cc, slices.Concat([]string{"-O2", "-o", bin}, ccArgs, []string{"floor/echo_uring.c", "-luring"})...); err != nil {
		return nil, err
	}
	return func(cpu, port int) *exec.Cmd { return pinned(cpu, bin, strconv.Itoa(port)) }, nil
}
