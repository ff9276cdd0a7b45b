//go:build linux

package main

// The TLS echo servers of scenario 10 (-role server -server NAME
// -tls-cert FILE -tls-key FILE), each written as its library's
// documentation shows, serving the same certificate:
//
//   - tls-unipoll: a netloop.Group (one Loop per CPU the process may use)
//     whose Conns have Config.TLS, an echo handler;
//   - tls-go-net: tls.Listen and a goroutine per connection copying what
//     it reads back through a 4 KiB buffer (io.Copy's own 32 KiB buffer
//     would add 28 KiB to each idle connection of Go's figure);
//   - tls-nbio: nbio's engine with its TLS extension (nbio/extension/tls,
//     a copy of crypto/tls in github.com/lesismal/llib), as nbio's TLS
//     example wires it.
//
// With -stats FILE a server writes, at each SIGUSR1, its goroutine count
// and its live heap after a collection to FILE as JSON: what the idle
// measurement reads besides the resident set.

import (
	"context"
	"crypto/tls"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"runtime"
	"syscall"
	"time"

	ltls "github.com/lesismal/llib/std/crypto/tls"
	"github.com/lesismal/nbio"
	ntls "github.com/lesismal/nbio/extension/tls"

	"github.com/unipoll/unipoll/eventloop"
	"github.com/unipoll/unipoll/netloop"
	"github.com/unipoll/unipoll/socket"
)

// tlsHandshakeTimeout is tls-unipoll's Config.HandshakeTimeout
// (-tls-handshake-timeout; 0: netloop's default): the flood measurement
// sets it longer than itself. Go net's server and nbio's have none.
var tlsHandshakeTimeout time.Duration

// tlsServers maps a name to a TLS echo server, which serves on addr with
// the certificate and key in the PEM files until the process is killed.
var tlsServers = map[string]func(addr, certFile, keyFile string, ready func()) error{
	"tls-unipoll": serveTLSUnipoll,
	"tls-go-net":  serveTLSGoNet,
	"tls-nbio":    serveTLSNbio,
}

// serverStats is what -stats writes.
type serverStats struct {
	Goroutines int
	HeapAlloc  uint64 // bytes, after runtime.GC
}

// reportStatsOnSignal writes serverStats to file at each SIGUSR1.
func reportStatsOnSignal(file string) {
	if file == "" {
		return
	}
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, syscall.SIGUSR1)
	go func() {
		for range sig {
			runtime.GC()
			var ms runtime.MemStats
			runtime.ReadMemStats(&ms)
			// This goroutine is the measurement's, not the server's.
			b, _ := json.Marshal(serverStats{Goroutines: runtime.NumGoroutine() - 1, HeapAlloc: ms.HeapAlloc})
			tmp := file + ".tmp"
			if os.WriteFile(tmp, b, 0o600) == nil {
				_ = os.Rename(tmp, file) // whole, for a reader that polls
			}
		}
	}()
}

// tlsEcho echoes on a netloop Conn; a full write queue keeps the input
// for later (the Conn stops reading meanwhile).
type tlsEcho struct{}

func (tlsEcho) Data(c *netloop.Conn, in []byte) int {
	n, err := c.Write(in)
	if errors.Is(err, netloop.ErrWriteQueueFull) {
		return 0
	}
	return n
}

func serveTLSUnipoll(addr, certFile, keyFile string, ready func()) error {
	cert, err := tls.LoadX509KeyPair(certFile, keyFile)
	if err != nil {
		return err
	}
	cfg := netloop.Config{TLS: &tls.Config{Certificates: []tls.Certificate{cert}}, HandshakeTimeout: tlsHandshakeTimeout}
	g, err := netloop.NewGroup(netloop.GroupConfig{Loops: runtime.GOMAXPROCS(0)})
	if err != nil {
		return err
	}
	if _, err := g.ListenTCP("tcp", addr, func(l *eventloop.Loop, c *socket.TCPConn) {
		_, _ = netloop.Add(l, c, tlsEcho{}, cfg)
	}); err != nil {
		return err
	}
	ready()
	return g.Run(context.Background(), nil)
}

func serveTLSGoNet(addr, certFile, keyFile string, ready func()) error {
	cert, err := tls.LoadX509KeyPair(certFile, keyFile)
	if err != nil {
		return err
	}
	l, err := tls.Listen("tcp", addr, &tls.Config{Certificates: []tls.Certificate{cert}})
	if err != nil {
		return err
	}
	defer l.Close()
	ready()
	for {
		c, err := l.Accept()
		if err != nil {
			return fmt.Errorf("tls-go-net: %w", err)
		}
		go func() {
			_, _ = io.CopyBuffer(c, c, make([]byte, 4<<10))
			c.Close()
		}()
	}
}

func serveTLSNbio(addr, certFile, keyFile string, ready func()) error {
	cert, err := ltls.LoadX509KeyPair(certFile, keyFile)
	if err != nil {
		return err
	}
	cfg := &ltls.Config{Certificates: []ltls.Certificate{cert}}
	engine := nbio.NewEngine(nbio.Config{
		Network:            "tcp",
		Addrs:              []string{addr},
		MaxWriteBufferSize: 6 * 1024 * 1024,
	})
	engine.OnOpen(ntls.WrapOpen(cfg, false, nil))
	engine.OnClose(ntls.WrapClose(nil))
	engine.OnData(ntls.WrapData(func(c *nbio.Conn, tc *ntls.Conn, data []byte) {
		_, _ = tc.Write(data) // encrypted into a buffer of its own at once
	}))
	if err := engine.Start(); err != nil {
		return err
	}
	ready()
	select {} // until the runner stops the process
}
