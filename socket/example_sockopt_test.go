//go:build linux

package socket_test

import (
	"fmt"
	"net"
	"time"

	"github.com/unipoll/unipoll/socket"
)

// Socket options for a server's accepted connections: keep-alive that
// notices a vanished peer within about a minute, a user timeout that drops
// a peer which stops acknowledging, and a close that resets rather than
// ends cleanly when output must be thrown away.
func ExampleTCPConn_SetKeepAliveConfig() {
	ln, err := socket.ListenTCP("tcp", "127.0.0.1:0")
	if err != nil {
		panic(err)
	}
	defer ln.Close()
	client, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		panic(err)
	}
	defer client.Close()

	// net.Dial returned, so the handshake is done and the connection
	// waits in the backlog: Accept has it without waiting for an event.
	c, err := ln.Accept()
	if err != nil {
		panic(err)
	}
	defer c.Close()

	if err := c.SetKeepAliveConfig(net.KeepAliveConfig{
		Enable: true, Idle: 30 * time.Second, Interval: 10 * time.Second, Count: 3,
	}); err != nil {
		panic(err)
	}
	if err := c.SetUserTimeout(time.Minute); err != nil {
		panic(err)
	}
	if err := c.SetLinger(0); err != nil { // Close now resets: the peer sees ECONNRESET
		panic(err)
	}
	fmt.Println(c.SetReadBuffer(0))
	// Output: socket: SetReadBuffer 0: invalid socket option value
}
