// Command resp is a server speaking the Redis protocol (RESP2 and inline
// commands, with pipelining) on the eventloop package: PING, ECHO, SET
// (with EX, PX, NX, XX), GET, DEL, EXISTS, INCR, MGET, and QUIT, on one
// Loop or a Group of them sharing one key space. Unchanged redis-cli and
// redis-benchmark talk to it.
//
// Every connection is an netloop.Conn: requests are parsed where they
// lie in its input (no copy), their replies queued and written once per
// read, so a pipeline costs one read and one write. Its buffers are
// bounded: a request larger than the limits is refused at its header
// with an error reply, before its body is read; a client that sends and
// never reads makes the Conn stop reading once its replies pass the
// high-water mark. Malformed input gets a protocol error and a close.
// Connections idle for -idle are closed, and expired keys nobody reads are
// swept, both on the Loops' timers (AfterFunc, Conn deadlines).
//
//	go run ./examples/resp -addr 127.0.0.1:6380 -loops 2
//	redis-cli -p 6380 set greeting hello
//	redis-benchmark -p 6380 -t ping,set,get -q
package main

import (
	"flag"
	"log"
	"os"
	"os/signal"
	"runtime/pprof"
	"syscall"
)

func main() {
	var cfg config
	flag.StringVar(&cfg.addr, "addr", "127.0.0.1:6380", "address to listen on")
	flag.IntVar(&cfg.loops, "loops", 1, "number of Loops (goroutines); 0: one per processor")
	flag.BoolVar(&cfg.reusePort, "reuseport", false, "a listener per Loop (SO_REUSEPORT) instead of one handing connections out")
	flag.DurationVar(&cfg.idle, "idle", 0, "close connections idle this long (0: never)")
	cpuprofile := flag.String("cpuprofile", "", "write a CPU profile of the run to this file (stopped by SIGINT or SIGTERM)")
	flag.Parse()

	srv, err := newServer(cfg, log.Printf)
	if err != nil {
		log.Fatal(err)
	}
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, os.Interrupt, syscall.SIGTERM)
	go func() {
		<-sigs
		srv.Stop()
	}()
	if *cpuprofile != "" {
		f, err := os.Create(*cpuprofile)
		if err != nil {
			log.Fatal(err)
		}
		if err := pprof.StartCPUProfile(f); err != nil {
			log.Fatal(err)
		}
	}
	log.Printf("resp: listening on %s with %d loop(s)", srv.Addr(), len(srv.g.Loops()))
	err = srv.Run()
	if *cpuprofile != "" {
		pprof.StopCPUProfile()
	}
	if err != nil {
		log.Fatal(err)
	}
	log.Print("resp: stopped")
}
