//go:build linux

package main

// Go's net package, a goroutine per connection: the echo server of the net
// package's own Listener example (io.Copy(c, c)). The runtime's netpoller
// parks each goroutine while its socket is not ready. io.Copy between two
// TCP connections splices through a pipe, and a connection waiting for
// input holds its pipe (two descriptors): at 10,000 connections that is
// 30,000 descriptors, past a hard limit of 20,000, and Accept fails as the
// example's log.Fatal would have it (the runner reports the point as
// failed).

import (
	"fmt"
	"io"
	"net"
)

func init() { goServers["go-net"] = serveNet }

func serveNet(addr string, ready func()) error {
	l, err := net.Listen("tcp", addr)
	if err != nil {
		return err
	}
	defer l.Close()
	ready()
	for {
		conn, err := l.Accept()
		if err != nil {
			return fmt.Errorf("go-net: %w", err)
		}
		go func(c net.Conn) {
			_, _ = io.Copy(c, c)
			c.Close()
		}(conn)
	}
}
