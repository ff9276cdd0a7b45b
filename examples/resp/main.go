// Command resp is a server speaking the Redis protocol (RESP2 and inline
// commands, with pipelining) on the eventloop package: PING, ECHO, SET
// (with EX, PX, NX, XX), GET, DEL, EXISTS, INCR, MGET, INFO and QUIT, on one
// Loop or a Group of them sharing one key space. Unchanged redis-cli and
// redis-benchmark talk to it.
//
// Every connection is an netloop.Conn: requests are parsed where they
// lie in its input (no copy), their replies queued and written once per
// read, so a pipeline costs one read and one write. Malformed input gets
// a protocol error and a close. Connections idle for -idle are closed,
// and expired keys nobody reads are swept, both on the Loops' timers
// (AfterFunc, Conn deadlines).
//
// # Limits
//
// Sizes are written as in redis.conf: 65536, 64kb, 16mb, 1gb (k, m, g
// are powers of 1000). The defaults are redis-server's, so a 16 MiB
// value works as it comes:
//
//	-max-bulk 512mb           one bulk string (redis' proto-max-bulk-len)
//	-max-request 1gb          one request, all its arguments and headers
//	                          (client-query-buffer-limit)
//	-max-reply 524352kb       one reply (512 MiB and room for its header):
//	                          a larger one is answered "ERR reply exceeds
//	                          the output buffer limit"
//	-max-client-memory 256mb  the input all clients together hold
//	                          unconsumed (maxmemory-clients, which redis
//	                          leaves off by default)
//
// A request over -max-bulk or -max-request (which is lowered to
// -max-client-memory, as a larger request could never be held) is refused
// at its header, before its body is read, with a protocol error and a
// close. Arrays are held to 1024 elements and inline commands and header
// lines to 64 KiB. None of these sizes is allocated in advance: a
// connection's buffers grow with what it sends and shrink when it has
// been served, so an idle client costs little.
//
// -max-client-memory bounds what matters when many clients send at once:
// the partial requests they hold. It counts the bytes held; the buffers
// around them grow by doubling, so the memory they take may be up to
// twice that. A client whose held input would pass the bound gets
// "-ERR client memory limit reached" and is disconnected (redis
// disconnects the largest clients instead; see clientMemory for why the
// one that grows is chosen here). INFO shows the bound, what is held
// (mem_clients_normal) and the clients refused (evicted_clients). Replies
// are not counted: a client that sends and never reads makes its Conn
// stop reading once its replies pass the high-water mark (256 KiB), so it
// holds at most that and one reply.
//
//	go run ./examples/resp -addr 127.0.0.1:6380 -loops 2
//	redis-cli -p 6380 set greeting hello
//	redis-cli -p 6380 -x set big < 16MiB.file
//	redis-cli -p 6380 info
//	redis-benchmark -p 6380 -t ping,set,get -q
//
// # TLS
//
// -tls-cert FILE -tls-key FILE serve TLS (1.2 and 1.3, crypto/tls through
// netloop's Config.TLS) on -addr instead of plain RESP, as redis-server
// does on its tls-port, so that redis-cli --tls and redis-benchmark --tls
// talk to it the same way:
//
//	go run ./examples/resp -addr 127.0.0.1:6390 -tls-cert cert.pem -tls-key key.pem
//	redis-cli --tls --cacert ca.pem -p 6390 ping
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
	maxBulk, maxRequest := size(defaultLimits.maxBulk), size(defaultLimits.maxTotal)
	maxReply, clientMem := size(defaultMaxReply), size(defaultClientMem)
	flag.Var(&maxBulk, "max-bulk", "largest bulk string (argument) in a request, a `size` as in redis.conf (16mb, 1gb)")
	flag.Var(&maxRequest, "max-request", "largest request, a `size` (lowered to -max-client-memory)")
	flag.Var(&maxReply, "max-reply", "largest reply, a `size`")
	flag.Var(&clientMem, "max-client-memory", "the input all clients together may hold unconsumed, a `size`; a client that would pass it is refused and disconnected")
	tlsCert := flag.String("tls-cert", "", "serve TLS on -addr with this certificate (a PEM `file`, with -tls-key)")
	tlsKey := flag.String("tls-key", "", "the TLS certificate's private key (a PEM `file`)")
	cpuprofile := flag.String("cpuprofile", "", "write a CPU profile of the run to this file (stopped by SIGINT or SIGTERM)")
	flag.Parse()
	cfg.lim = limits{maxBulk: int(maxBulk), maxTotal: int(maxRequest)}
	cfg.maxReply, cfg.clientMem = int(maxReply), int(clientMem)
	tlsConfig, err := loadTLS(*tlsCert, *tlsKey)
	if err != nil {
		log.Fatal(err)
	}
	cfg.conn.TLS = tlsConfig

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
