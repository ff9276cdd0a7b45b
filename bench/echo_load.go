//go:build linux

package main

// The echo load generator, a process of its own (-role load). It opens
// -conns connections to the server and runs one goroutine per connection
// that sends a message of -size bytes, reads the whole echo back, and
// starts again (closed loop: one message in flight per connection). It is
// written with Go's net package, the same for every server, so only the
// server differs between measurements.
//
// Protocol with the runner, on standard input and output:
//
//  1. it connects every connection and prints "READY";
//  2. the runner may attach strace to the server, and writes a line;
//  3. it runs -warmup, then measures -dur: messages completed, their
//     round-trip latency, and the server's CPU time and context switches
//     read from /proc/PID (-pid) at both ends of the window; it prints the
//     result as one JSON line;
//  4. it keeps the connections open until its standard input closes, so
//     that a server's system calls can be counted up to this point without
//     its connection teardown.

import (
	"bufio"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"os"
	"sync"
	"sync/atomic"
	"time"
)

// loadResult is what the load generator reports.
type loadResult struct {
	Msgs      uint64        // round trips completed in the window
	AllMsgs   uint64        // round trips completed from step 2 to the end
	Window    time.Duration // the window's length, measured
	ServerCPU time.Duration // the server's utime+stime in the window
	Switches  uint64        // the server's context switches in the window
	P50, P99  float64       // round-trip latency in the window, ns
	Errors    int           // connections that failed
	FirstErr  string        `json:",omitempty"`
}

func loadMain(args []string) error {
	fs := flag.NewFlagSet("load", flag.ContinueOnError)
	addr := fs.String("addr", "", "server address")
	conns := fs.Int("conns", 100, "connections")
	size := fs.Int("size", 16, "message size in bytes")
	warmup := fs.Duration("warmup", time.Second, "time before the window")
	dur := fs.Duration("dur", 2*time.Second, "the measured window")
	pid := fs.Int("pid", 0, "the server's process id, for its CPU time")
	tlsCA := fs.String("tls-ca", "", "speak TLS (any version), trusting the CA in this PEM file")
	if err := fs.Parse(args); err != nil {
		return err
	}
	var wrap func(net.Conn) (net.Conn, error)
	if *tlsCA != "" {
		cfg, err := tlsClientConfig(*tlsCA, 0)
		if err != nil {
			return err
		}
		wrap = tlsWrap(cfg)
	}
	cs, err := dialAllWith(*addr, *conns, wrap)
	defer func() {
		for _, c := range cs {
			c.Close()
		}
	}()
	if err != nil {
		return err
	}
	in := bufio.NewReader(os.Stdin)
	fmt.Println("READY")
	if _, err := in.ReadString('\n'); err != nil {
		return fmt.Errorf("waiting for the go-ahead: %w", err)
	}

	var (
		h        hist
		counts   = make([]atomic.Uint64, len(cs))
		window   atomic.Bool
		stop     atomic.Bool
		errMu    sync.Mutex
		errCount int
		firstErr error
		wg       sync.WaitGroup
	)
	deadline := time.Now().Add(*warmup + *dur + 30*time.Second)
	for i, c := range cs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := pingPong(c, *size, deadline, &stop, &window, &counts[i], &h); err != nil && !stop.Load() {
				errMu.Lock()
				errCount++
				if firstErr == nil {
					firstErr = err
				}
				errMu.Unlock()
			}
		}()
	}
	sum := func() uint64 {
		var n uint64
		for i := range counts {
			n += counts[i].Load()
		}
		return n
	}
	time.Sleep(*warmup)
	cpu0, err := procCPU(*pid)
	if err != nil {
		return err
	}
	sw0, _ := procSwitches(*pid)
	m0, t0 := sum(), time.Now()
	window.Store(true)
	time.Sleep(*dur)
	window.Store(false)
	m1, t1 := sum(), time.Now()
	cpu1, err := procCPU(*pid)
	if err != nil {
		return err
	}
	sw1, _ := procSwitches(*pid)
	stop.Store(true)
	wg.Wait() // each connection finishes the round trip it is in

	res := loadResult{
		Msgs: m1 - m0, AllMsgs: sum(), Window: t1.Sub(t0),
		ServerCPU: cpu1 - cpu0, Switches: sw1 - sw0,
	}
	counts2 := h.counts()
	if res.Msgs > 0 { // no round trip in the window: no latency (NaN, which JSON cannot carry)
		res.P50, res.P99 = quantile(counts2, 0.50), quantile(counts2, 0.99)
	}
	errMu.Lock()
	res.Errors = errCount
	if firstErr != nil {
		res.FirstErr = firstErr.Error()
	}
	errMu.Unlock()
	if err := report(res); err != nil {
		return err
	}
	// Hold the connections until the runner is done with the server.
	_, _ = io.Copy(io.Discard, in)
	return nil
}

// dialAll opens n connections, 64 at a time, retrying a refused or reset
// dial (a listen queue can overflow under a burst of connects) until 60
// seconds have passed in all.
func dialAll(addr string, n int) ([]net.Conn, error) { return dialAllWith(addr, n, nil) }

// dialAllWith is dialAll with each connection passed through wrap (a TLS
// handshake), if not nil; a failed wrap counts as a failed dial.
func dialAllWith(addr string, n int, wrap func(net.Conn) (net.Conn, error)) ([]net.Conn, error) {
	cs := make([]net.Conn, n)
	errs := make(chan error, n)
	sem := make(chan struct{}, 64)
	var wg sync.WaitGroup
	deadline := time.Now().Add(60 * time.Second)
	for i := range cs {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			err := errors.New("dial deadline passed")
			for time.Now().Before(deadline) {
				var c net.Conn
				if c, err = net.DialTimeout("tcp", addr, 5*time.Second); err == nil && wrap != nil {
					c, err = wrap(c)
				}
				if err == nil {
					cs[i] = c
					return
				}
				time.Sleep(100 * time.Millisecond)
			}
			errs <- err
		}()
	}
	wg.Wait()
	close(errs)
	var out []net.Conn
	for _, c := range cs {
		if c != nil {
			out = append(out, c)
		}
	}
	if err := <-errs; err != nil {
		return out, fmt.Errorf("dial %d connections to %s: %d failed, first: %w", n, addr, n-len(out), err)
	}
	return out, nil
}

// pingPong runs one connection's closed loop until stop.
func pingPong(c net.Conn, size int, deadline time.Time, stop, window *atomic.Bool, count *atomic.Uint64, h *hist) error {
	if err := c.SetDeadline(deadline); err != nil {
		return err
	}
	msg := make([]byte, size)
	for i := range msg {
		msg[i] = byte(i)
	}
	buf := make([]byte, size)
	for !stop.Load() {
		t0 := time.Now()
		if _, err := c.Write(msg); err != nil {
			return err
		}
		if _, err := io.ReadFull(c, buf); err != nil {
			return err
		}
		if buf[0] != msg[0] || buf[size-1] != msg[size-1] {
			return errors.New("the echo differs from the message")
		}
		if window.Load() {
			h.record(int64(time.Since(t0)))
		}
		count.Add(1)
	}
	return nil
}
