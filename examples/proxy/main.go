//go:build unix

// Command proxy is a TCP proxy on netloop: every client that connects to
// -listen gets a connection of its own to -backend, and the two are
// relayed both ways until both have finished.
//
// Both connections of a pair live on the Loop that accepted the client,
// as two netloop.Conns whose handlers write what one reads to the other
// (pair.go). Back pressure holds in both directions: a Conn whose queue
// passes its high-water mark pauses the one that fills it, so a slow
// client or a slow backend costs at most the two write queues. A
// half-close is forwarded (the backend still answers a client that has
// finished sending); a reset, a failed connect or a timeout on one side
// resets the other, so nobody mistakes a cut stream for a complete one.
//
// The backend is dialed for each client without waiting on the Loop; a
// connect that has not completed within -connect-timeout resets the
// client. On SIGTERM or SIGINT the proxy drains (netloop.Group.Shutdown):
// the listener closes at once, so new clients are refused; the pairs in
// flight finish on their own; at -drain-timeout the rest are closed. Then
// it exits with status 0.
//
// Flags:
//
//	-listen ADDR           address to listen on (127.0.0.1:9100)
//	-backend ADDR          backend, an IP address and port (127.0.0.1:9000)
//	-loops N               Loops (goroutines); 0: one per processor (1)
//	-connect-timeout D     reset a client whose backend has not answered in D (5s)
//	-idle-timeout D        reset a pair silent both ways for D; 0: never (5m)
//	-drain-timeout D       on SIGTERM, wait at most D for pairs to finish (10s)
//	-cpuprofile FILE       write a CPU profile of the run to FILE
//
// Try it against examples/echo:
//
//	go run ./examples/echo -addr 127.0.0.1:9000 &
//	go run ./examples/proxy -listen 127.0.0.1:9100 -backend 127.0.0.1:9000
//	nc 127.0.0.1 9100
package main

import (
	"flag"
	"log"
	"os"
	"os/signal"
	"runtime/pprof"
	"syscall"
	"time"
)

func main() {
	var cfg config
	flag.StringVar(&cfg.listen, "listen", "127.0.0.1:9100", "address to listen on")
	flag.StringVar(&cfg.backend, "backend", "127.0.0.1:9000", "backend address: an IP address and a port")
	flag.IntVar(&cfg.loops, "loops", 1, "number of Loops (goroutines); 0: one per processor")
	flag.DurationVar(&cfg.connectTimeout, "connect-timeout", 5*time.Second, "reset a client whose backend connect has not completed in this time")
	flag.DurationVar(&cfg.idleTimeout, "idle-timeout", 5*time.Minute, "reset a pair silent both ways this long (0: never)")
	flag.DurationVar(&cfg.drainTimeout, "drain-timeout", 10*time.Second, "on SIGTERM or SIGINT, wait at most this long for pairs to finish")
	cpuprofile := flag.String("cpuprofile", "", "write a CPU profile of the run to this file (stopped by SIGINT or SIGTERM)")
	flag.Parse()

	px, err := newProxy(cfg, log.Printf)
	if err != nil {
		log.Fatal(err)
	}
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, os.Interrupt, syscall.SIGTERM)
	go func() {
		<-sigs
		log.Print("proxy: draining")
		px.Stop()
	}()
	if *cpuprofile != "" {
		f, err := os.Create(*cpuprofile)
		if err != nil {
			log.Fatal(err)
		}
		if err := pprof.StartCPUProfile(f); err != nil {
			log.Fatal(err)
		}
		defer pprof.StopCPUProfile()
	}
	log.Printf("proxy: listening on %s, backend %s, %d loop(s)", px.Addr(), cfg.backend, len(px.g.Loops()))
	if err := px.Run(); err != nil {
		log.Print(err)
		pprof.StopCPUProfile()
		os.Exit(1)
	}
	log.Print("proxy: stopped")
}
