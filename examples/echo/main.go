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
//	go run ./examples/echo -addr 127.0.0.1:9000
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
	flag.Parse()

	srv, err := newServer(*addr, log.Printf)
	if err != nil {
		log.Fatal(err)
	}
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, os.Interrupt, syscall.SIGTERM)
	go func() {
		<-sigs
		srv.Stop()
	}()
	log.Printf("echo: listening on %s (backend %s)", srv.Addr(), srv.p.Backend())
	if err := srv.Run(); err != nil {
		log.Fatal(err)
	}
	log.Print("echo: stopped")
}
