//go:build linux

// Command gainecho is the echo server of github.com/pawelgaczynski/gain
// (v0.4.0-alpha), the Go io_uring framework, for the bench's echo
// scenario (echo server "gain", echo_servers_gain.go). It is a main
// package of its own, not a -server of the bench binary, because gain
// reaches into the syscall package with a go:linkname that Go 1.23 and
// later refuse to link unless the linker is given -checklinkname=0: the
// runner builds this package with that flag, as it compiles the C floors,
// and the bench binary itself links as it always did.
//
// The server is gain's TCP echo example without its logging and its
// shutdown after two clients: OnRead writes back what it received. It
// takes every buffered byte (Next(-1)), not the n that OnRead is given:
// gain receives again without calling OnRead while the socket still has
// data, and then reports only the last receive's n, so Next(n) would
// leave bytes behind that no later call would echo.
//
// gain's server receives with one single-shot recv per completion into
// the connection's own buffer and sends with one send per OnRead; it has
// no multishot receive or provided buffer ring to turn on (its io_uring
// package can prepare a multishot receive, but the server never submits
// one). It runs with its defaults: the Reactor architecture (an acceptor
// ring and one consumer ring per CPU this process may use, which
// runtime.NumCPU counts from the affinity mask that taskset sets).
//
//	gainecho -addr 127.0.0.1:9000
//
// It prints READY once gain reports it started, and serves until killed.
package main

import (
	"flag"
	"fmt"
	"os"

	"github.com/pawelgaczynski/gain"
	"github.com/pawelgaczynski/gain/logger"
)

type echo struct {
	gain.DefaultEventHandler
}

// OnStart runs once gain's workers are up and its listener accepts.
func (echo) OnStart(gain.Server) { fmt.Println("READY") }

// OnRead queues everything buffered for sending; gain submits the send
// when OnRead returns and receives again when the send has completed.
func (echo) OnRead(c gain.Conn, _ int) {
	buf, err := c.Next(-1)
	if err != nil {
		return
	}
	_, _ = c.Write(buf)
}

func main() {
	addr := flag.String("addr", "127.0.0.1:9000", "address to listen on")
	flag.Parse()
	err := gain.ListenAndServe("tcp://"+*addr, echo{}, gain.WithLoggerLevel(logger.WarnLevel))
	fmt.Fprintln(os.Stderr, "gainecho:", err)
	os.Exit(1)
}
