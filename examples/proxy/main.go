//go:build unix

// Command proxy is a TCP proxy on netloop: every client that connects to
// -listen gets a connection of its own to -backend, and the two are
// relayed both ways until both have finished.
//
// The client is accepted by a netloop.Group and stays on the Loop that
// accepted it; the backend is dialed from that Loop (netloop.Dialer, with
// -connect-timeout; a host name is resolved off the Loop), and both
// connections of the pair live there as netloop.Conns (pair.go). Once the
// backend answers, netloop.Relay moves the bytes between them, with
// splice(2) on Linux so that they never enter user space, or, with -mode
// copy, their handlers copy them through the Conns' buffers (copy.go).
// Either way back pressure holds in both directions (a slow client or
// backend stops the other side's reading, so a pair costs at most a
// pipe's or a queue's worth of memory each way), a half-close is
// forwarded (the backend still answers a client that has finished
// sending), and a reset, a failed or timed-out connect or a timeout on one
// side resets the other, so nobody mistakes a cut stream for a whole one.
//
// On SIGTERM or SIGINT the proxy drains (netloop.Group.Shutdown): the
// listener closes at once, so new clients are refused; the pairs in
// flight finish on their own; at -drain-timeout the rest are closed. Then
// it exits with status 0.
//
// Flags:
//
//	-listen ADDR           address to listen on (127.0.0.1:9100)
//	-backend HOST:PORT     the backend (127.0.0.1:9000)
//	-loops N               Loops (goroutines); 0: one per processor (1)
//	-mode relay|copy       relay: netloop.Relay (splice); copy: the handlers copy (relay)
//	-connect-timeout D     reset a client whose backend has not answered in D (5s)
//	-idle-timeout D        close a pair silent both ways for D; 0: never (5m)
//	-drain-timeout D       on SIGTERM, wait at most D for pairs to finish (10s)
//	-tls-cert FILE         terminate TLS: clients speak TLS to the proxy with this
//	-tls-key FILE          certificate and key (PEM), the backend gets plaintext;
//	                       implies -mode copy (splice would pass ciphertext on)
//	-cpuprofile FILE       write a CPU profile of the run to FILE
//
// Try it against examples/echo, in two terminals:
//
//	go run ./examples/echo -addr 127.0.0.1:9000
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
	flag.StringVar(&cfg.backend, "backend", "127.0.0.1:9000", "the backend, host:port")
	flag.IntVar(&cfg.loops, "loops", 1, "number of Loops (goroutines); 0: one per processor")
	mode := flag.String("mode", "relay", "relay: netloop.Relay (splice on Linux); copy: the handlers copy through the Conns' buffers")
	flag.DurationVar(&cfg.connectTimeout, "connect-timeout", 5*time.Second, "reset a client whose backend connect has not completed in this time")
	flag.DurationVar(&cfg.idleTimeout, "idle-timeout", 5*time.Minute, "close a pair silent both ways this long (0: never)")
	flag.DurationVar(&cfg.drainTimeout, "drain-timeout", 10*time.Second, "on SIGTERM or SIGINT, wait at most this long for pairs to finish")
	tlsCert := flag.String("tls-cert", "", "terminate TLS: clients speak TLS with this certificate (a PEM `file`, with -tls-key); implies -mode copy")
	tlsKey := flag.String("tls-key", "", "the TLS certificate's private key (a PEM `file`)")
	cpuprofile := flag.String("cpuprofile", "", "write a CPU profile of the run to this file (stopped by SIGINT or SIGTERM)")
	flag.Parse()
	switch *mode {
	case "relay":
	case "copy":
		cfg.copy = true
	default:
		log.Fatalf("proxy: -mode %q: want relay or copy", *mode)
	}
	var err error
	if cfg.tls, err = loadTLS(*tlsCert, *tlsKey); err != nil {
		log.Fatal(err)
	}
	if cfg.tls != nil {
		*mode = "copy, TLS to the clients"
	}

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
	log.Printf("proxy: listening on %s, backend %s, %d loop(s), mode %s", px.Addr(), cfg.backend, len(px.g.Loops()), *mode)
	if err := px.Run(); err != nil {
		log.Print(err)
		pprof.StopCPUProfile()
		os.Exit(1)
	}
	log.Print("proxy: stopped")
}
