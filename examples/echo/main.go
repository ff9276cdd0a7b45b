//go:build unix

// Command echo is a TCP echo server written directly on poll.Poll, with no
// event loop in between: the canonical mio example, in Go.
//
// One goroutine owns everything. The listener and every connection are
// registered edge-triggered; each event is handled by doing non-blocking
// I/O until it would block, which is what edge triggering requires. A
// connection whose peer reads slowly keeps the unsent rest of its echo and
// stops reading until a Writable event lets it flush, so memory per
// connection is bounded by one read buffer.
//
// Two user-space Registrations share the Poll with the sockets: one stops
// the server from another goroutine (Stop, used by the signal handler and
// the tests), the other paces accept when the process runs out of
// descriptors (see server.pauseAccept).
//
// With -mode loop the same server runs on the eventloop package instead
// (loop_server.go): -loops N Loops, one goroutine each, share the
// listener (-reuseport gives each Loop its own).
//
//	go run ./examples/echo -addr 127.0.0.1:9000
//	go run ./examples/echo -mode loop -loops 2
//	nc 127.0.0.1 9000
package main

import (
	"flag"
	"log"
	"os"
	"os/signal"
	"syscall"
)

func main() {
	addr := flag.String("addr", "127.0.0.1:9000", "address to listen on")
	mode := flag.String("mode", "poll", "poll: written on poll.Poll; loop: on eventloop")
	loops := flag.Int("loops", 1, "loop mode: the number of Loops (goroutines)")
	reusePort := flag.Bool("reuseport", false, "loop mode: a listener per Loop (SO_REUSEPORT)")
	flag.Parse()

	var srv echoServer
	var err error
	switch *mode {
	case "poll":
		srv, err = newServer(*addr, log.Printf)
	case "loop":
		srv, err = newLoopServer(*addr, *loops, *reusePort, log.Printf)
	default:
		log.Fatalf("echo: unknown -mode %q", *mode)
	}
	if err != nil {
		log.Fatal(err)
	}
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, os.Interrupt, syscall.SIGTERM)
	go func() {
		<-sigs
		srv.Stop()
	}()
	log.Printf("echo: listening on %s (backend %s, mode %s)", srv.Addr(), srv.Backend(), *mode)
	if err := srv.Run(); err != nil {
		log.Fatal(err)
	}
	log.Print("echo: stopped")
}
