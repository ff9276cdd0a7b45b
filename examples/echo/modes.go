//go:build unix

package main

import "net"

// echoServer is what both modes (server.go on poll.Poll, loop_server.go on
// eventloop) offer main and the tests.
type echoServer interface {
	Addr() net.Addr
	Backend() string
	Stop()
	Run() error
}

// Backend names the Poll's OS mechanism.
func (s *server) Backend() string { return s.p.Backend() }

var (
	_ echoServer = (*server)(nil)
	_ echoServer = (*loopServer)(nil)
)
