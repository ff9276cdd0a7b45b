//go:build linux

package main

// The contenders of the echo scenario. Each is an echoServer entry; an
// entry for a part of the library that has not landed carries Pending, and
// becomes real by giving it a Prepare (one file, e.g. the eventloop
// modes of examples/echo).

import (
	"fmt"
	"os/exec"
	"path/filepath"
	"strconv"
)

// echoServer is one server the echo scenario measures.
type echoServer struct {
	Name    string
	About   string // one line for the report: what exactly runs
	Pending string // non-empty: not built yet, and what it waits for
	// Prepare builds what the server needs and returns how to start it
	// listening on 127.0.0.1:port, pinned to cpu (-1: unpinned). An error
	// wrapping errSkip means this machine cannot run it; the message says
	// why.
	Prepare func(r *Runner) (func(cpu, port int) *exec.Cmd, error)
}

var echoServers []echoServer

func registerEcho(s echoServer) { echoServers = append(echoServers, s) }

// The order here is the order of the table's columns: unipoll, the floor,
// then the Go peers.
func init() {
	registerEcho(echoServer{
		Name:  "unipoll",
		About: "examples/echo of the library under test: raw Poll, edge-triggered, one goroutine",
		Prepare: func(r *Runner) (func(cpu, port int) *exec.Cmd, error) {
			return buildUnipollEcho(r, r.o.lib, "unipoll-echo")
		},
	})
	registerEcho(echoServer{
		Name:  "unipoll-loop",
		About: "examples/echo -mode loop: one eventloop.Loop, a Conn per connection",
		Prepare: func(r *Runner) (func(cpu, port int) *exec.Cmd, error) {
			return buildUnipollEcho(r, r.o.lib, "unipoll-echo-loop", "-mode", "loop", "-loops", "1")
		},
	})
	registerEcho(echoServer{
		Name:  "unipoll-group",
		About: "examples/echo -mode loop -loops N: an netloop.Group of one Loop per CPU the server may use, connections handed round-robin",
		Prepare: func(r *Runner) (func(cpu, port int) *exec.Cmd, error) {
			start, err := buildUnipollEcho(r, r.o.lib, "unipoll-echo-group")
			if err != nil {
				return nil, err
			}
			return func(cpu, port int) *exec.Cmd {
				loops := "2"
				if cpu >= 0 {
					loops = "1" // pinned to one CPU: a second Loop would only take turns with the first
				}
				cmd := start(cpu, port)
				cmd.Args = append(cmd.Args, "-mode", "loop", "-loops", loops)
				return cmd
			}, nil
		},
	})
	registerEcho(echoServer{
		Name:  "c-floor",
		About: "floor/echo_epoll.c: C, level-triggered epoll, one read and one write per message",
		Prepare: func(r *Runner) (func(cpu, port int) *exec.Cmd, error) {
			cc, err := exec.LookPath("cc")
			if err != nil {
				return nil, fmt.Errorf("%w: no C compiler (cc) on PATH; install one (apt-get install -y gcc) to measure the floor", errSkip)
			}
			bin := filepath.Join(r.buildDir, "echo_epoll")
			if err := build(".", cc, "-O2", "-o", bin, "floor/echo_epoll.c"); err != nil {
				return nil, err
			}
			return func(cpu, port int) *exec.Cmd { return pinned(cpu, bin, strconv.Itoa(port)) }, nil
		},
	})
	for _, p := range []struct{ name, about string }{
		{"go-net", "Go net, a goroutine per connection, io.Copy(c, c) (the net package's Listener example); io.Copy splices through a pipe that a waiting connection holds, so each connection takes three descriptors (30,000 for 10,000 connections)"},
		{"netpoll", "github.com/cloudwego/netpoll EventLoop, its echo example's OnRequest"},
		{"gnet", "github.com/panjf2000/gnet/v2 v2.9.7, its README's echo (OnTraffic: Next, Write), WithMulticore"},
		{"nbio", "github.com/lesismal/nbio v1.6.8, its quick start's engine (OnData: Write a copy)"},
	} {
		registerEcho(echoServer{
			Name: p.name, About: p.about,
			Prepare: func(r *Runner) (func(cpu, port int) *exec.Cmd, error) {
				return func(cpu, port int) *exec.Cmd {
					return pinned(cpu, r.self, "-role", "server", "--", "-server", p.name, "-addr", fmt.Sprintf("127.0.0.1:%d", port))
				}, nil
			},
		})
	}
}

// buildUnipollEcho builds examples/echo of the checkout in lib as name and
// starts it with args after its -addr.
func buildUnipollEcho(r *Runner, lib, name string, args ...string) (func(cpu, port int) *exec.Cmd, error) {
	bin := filepath.Join(r.buildDir, name)
	if err := build(lib, "go", "build", "-o", bin, "./examples/echo"); err != nil {
		return nil, err
	}
	return func(cpu, port int) *exec.Cmd {
		return pinned(cpu, bin, append([]string{"-addr", fmt.Sprintf("127.0.0.1:%d", port)}, args...)...)
	}, nil
}
