//go:build linux

package main

// The TLS side of the load generators: the echo load's handshake
// (-role load -tls-ca FILE), and the handshake load of scenario 10
// (-role handshake), a process of its own that opens TLS 1.3 connections
// to -addr, -window at a time, each closed as soon as its handshake is
// done, and counts those done in a window.

import (
	"crypto/tls"
	"errors"
	"flag"
	"net"
	"sync"
	"sync/atomic"
	"time"
)

// tlsWrap makes a connection a TLS client of cfg and handshakes, within
// 20 seconds.
func tlsWrap(cfg *tls.Config) func(net.Conn) (net.Conn, error) {
	return func(c net.Conn) (net.Conn, error) {
		tc := tls.Client(c, cfg)
		_ = tc.SetDeadline(time.Now().Add(20 * time.Second))
		if err := tc.Handshake(); err != nil {
			c.Close()
			return nil, err
		}
		_ = tc.SetDeadline(time.Time{})
		return tc, nil
	}
}

// handshakeResult is what the handshake load reports.
type handshakeResult struct {
	Handshakes uint64        // completed in the window
	Window     time.Duration // measured
	ServerCPU  time.Duration // the server's utime+stime in the window
	Errors     uint64
	FirstErr   string `json:",omitempty"`
}

func handshakeMain(args []string) error {
	fs := flag.NewFlagSet("handshake", flag.ContinueOnError)
	addr := fs.String("addr", "", "server address")
	ca := fs.String("tls-ca", "", "the CA to trust, a PEM file")
	window := fs.Int("window", 16, "handshakes in flight")
	warmup := fs.Duration("warmup", 300*time.Millisecond, "time before the window")
	dur := fs.Duration("dur", 2*time.Second, "the measured window")
	pid := fs.Int("pid", 0, "the server's process id, for its CPU time")
	if err := fs.Parse(args); err != nil {
		return err
	}
	cfg, err := tlsClientConfig(*ca, tls.VersionTLS13)
	if err != nil {
		return err
	}
	var (
		done, errs atomic.Uint64
		stop       atomic.Bool
		firstErr   atomic.Value
		wg         sync.WaitGroup
	)
	for range *window {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for !stop.Load() {
				c, err := net.DialTimeout("tcp", *addr, 5*time.Second)
				if err == nil {
					tc := tls.Client(c, cfg)
					_ = tc.SetDeadline(time.Now().Add(10 * time.Second))
					err = tc.Handshake()
					if err == nil && tc.ConnectionState().Version != tls.VersionTLS13 {
						err = errors.New("not TLS 1.3")
					}
					_ = tc.Close() // close_notify, then the socket's close
				}
				if err != nil {
					errs.Add(1)
					firstErr.CompareAndSwap(nil, err.Error())
					continue
				}
				done.Add(1)
			}
		}()
	}
	time.Sleep(*warmup)
	cpu0, err := procCPU(*pid)
	if err != nil {
		return err
	}
	n0, e0, t0 := done.Load(), errs.Load(), time.Now()
	time.Sleep(*dur)
	n1, e1, t1 := done.Load(), errs.Load(), time.Now()
	cpu1, err := procCPU(*pid)
	if err != nil {
		return err
	}
	stop.Store(true)
	wg.Wait()
	res := handshakeResult{Handshakes: n1 - n0, Window: t1.Sub(t0), ServerCPU: cpu1 - cpu0, Errors: e1 - e0}
	if s, ok := firstErr.Load().(string); ok {
		res.FirstErr = s
	}
	return report(res)
}
