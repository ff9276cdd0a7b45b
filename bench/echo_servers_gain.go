//go:build linux

package main

// gain (github.com/pawelgaczynski/gain v0.4.0-alpha), the Go io_uring
// framework, as an echo peer: gainecho/, a main package of its own that
// the runner builds with -ldflags=-checklinkname=0 (gain links to a
// function of the syscall package by go:linkname, which the linker of Go
// 1.23 and later refuses without that flag). The bench binary never
// imports gain, so go run ., go vet and go test here build as before.

import (
	"errors"
	"fmt"
	"os/exec"
	"path/filepath"

	"github.com/unipoll/unipoll/sys"
)

func init() {
	registerEcho(echoServer{
		Name:    "gain",
		About:   "github.com/pawelgaczynski/gain v0.4.0-alpha (gainecho/), its TCP echo example's OnRead (Next, Write), defaults (Reactor: an acceptor and a consumer ring per CPU); one single-shot recv and one send per message, gain's server has no multishot receive",
		Prepare: prepareGain,
	})
}

// echoUringPeers are the Go peers that run on io_uring: the raw Poll's
// "below every peer" on epoll leaves them out, as it leaves out the
// io_uring floor (echoFloors); the uring backend's targets name them.
var echoUringPeers = []string{"gain"}

// prepareGain builds gainecho/ and returns how to start it. A kernel that
// gives this process no io_uring (sys.ErrBackendUnavailable: too old,
// kernel.io_uring_disabled, a seccomp filter) is a skip, as for the C
// io_uring floor: gain cannot run there at all.
func prepareGain(r *Runner) (func(cpu, port int) *exec.Cmd, error) {
	s, err := sys.New(sys.BackendUring)
	if errors.Is(err, sys.ErrBackendUnavailable) {
		return nil, fmt.Errorf("%w: this kernel gives no io_uring, which gain needs: %v", errSkip, err)
	}
	if err != nil {
		return nil, err
	}
	if err := s.Close(); err != nil {
		return nil, err
	}
	bin := filepath.Join(r.buildDir, "gainecho")
	if err := build(".", "go", "build", "-ldflags=-checklinkname=0", "-o", bin, "./gainecho"); err != nil {
		return nil, err
	}
	return func(cpu, port int) *exec.Cmd {
		return pinned(cpu, bin, "-addr", fmt.Sprintf("127.0.0.1:%d", port))
	}, nil
}
