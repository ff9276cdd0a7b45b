//go:build linux

package main

// Go's net package, a goroutine per connection: the echo server of the net
// package's own Listener example (io.Copy(c, c)). The runtime's netpoller
// parks each goroutine while its socket is not ready.

import (
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
			return err
		}
		go func(c net.Conn) {
			_, _ = io.Copy(c, c)
			c.Close()
		}(conn)
	}
}
