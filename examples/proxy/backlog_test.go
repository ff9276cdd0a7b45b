//go:build unix

package main

import (
	"net"

	"github.com/unipoll/unipoll/socket"
)

// listenBacklog listens on a free loopback port with a backlog of n, and
// never accepts.
func listenBacklog(n int) (interface {
	Addr() net.Addr
	Close() error
}, error) {
	return socket.ListenTCP("tcp", "127.0.0.1:0", socket.WithBacklog(n))
}
