//go:build linux

package main

// The Go net proxy the proxy scenario measures examples/proxy against:
// what a Go user writes first, a goroutine per direction with io.Copy.
// io.Copy from one *net.TCPConn to another splices through a pipe (the
// runtime's splice path), so the bytes never enter user space; each
// direction holds its pipe while it waits for input.

import (
	"fmt"
	"io"
	"net"
)

// goProxies maps a proxy's name to a function that relays every
// connection accepted on addr to a connection of its own to backend, until
// the process is killed. ready is called once it accepts.
var goProxies = map[string]func(addr, backend string, ready func()) error{
	"go-net-proxy": serveNetProxy,
}

func serveNetProxy(addr, backend string, ready func()) error {
	l, err := net.Listen("tcp", addr)
	if err != nil {
		return err
	}
	defer l.Close()
	ready()
	for {
		c, err := l.Accept()
		if err != nil {
			return fmt.Errorf("go-net-proxy: %w", err)
		}
		go relayNet(c.(*net.TCPConn), backend)
	}
}

// relayNet dials the backend for c and copies both ways; each direction
// forwards its end of input as a half-close, and the pair closes when both
// have ended.
func relayNet(c *net.TCPConn, backend string) {
	defer c.Close()
	b, err := net.Dial("tcp", backend)
	if err != nil {
		return
	}
	defer b.Close()
	done := make(chan struct{})
	go func() {
		_, _ = io.Copy(b, c)
		_ = b.(*net.TCPConn).CloseWrite()
		close(done)
	}()
	_, _ = io.Copy(c, b)
	_ = c.CloseWrite()
	<-done
}
