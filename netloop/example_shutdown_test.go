package netloop_test

import (
	"context"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"time"

	"github.com/unipoll/unipoll/eventloop"
	"github.com/unipoll/unipoll/netloop"
	"github.com/unipoll/unipoll/socket"
)

// farewell answers every request with "bye" once a drain has begun: a
// DrainHandler finishes its Conns its own way.
type farewell struct{ echo }

func (farewell) Draining(c *netloop.Conn) {
	_, _ = c.WriteString("bye\n")
	c.Close() // once "bye" is written
}

// Shutdown ends a server gracefully: the listener closes at once (new
// clients are refused), every Conn hears that a drain has begun and
// finishes, and Run returns. At the context's deadline what is left is
// reset.
func ExampleGroup_Shutdown() {
	g, err := netloop.NewGroup(netloop.GroupConfig{Loops: 2})
	if err != nil {
		panic(err)
	}
	defer g.Close()
	ln, err := g.ListenTCP("tcp", "127.0.0.1:0", func(l *eventloop.Loop, c *socket.TCPConn) {
		_, _ = netloop.Add(l, c, farewell{}, netloop.Config{})
	})
	if err != nil {
		panic(err)
	}
	done := make(chan error, 1)
	go func() { done <- g.Run(context.Background(), nil) }()

	c, _ := net.Dial("tcp", ln.Addr().String())
	defer c.Close()
	fmt.Fprint(c, "hi\n")
	buf := make([]byte, 3)
	_, _ = io.ReadFull(c, buf) // served: the Conn is on its Loop

	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	fmt.Println("shutdown:", g.Shutdown(ctx))
	rest, _ := io.ReadAll(c)
	fmt.Printf("client read %q, then the end\n", rest)
	_, err = net.Dial("tcp", ln.Addr().String())
	fmt.Println("new client refused:", err != nil)
	fmt.Println("run:", <-done)
	// Output:
	// shutdown: <nil>
	// client read "bye\n", then the end
	// new client refused: true
	// run: <nil>
}

// A Group serves a Unix-domain socket as it does TCP; the socket file
// goes with the Listener.
func ExampleGroup_ListenUnix() {
	g, err := netloop.NewGroup(netloop.GroupConfig{Loops: 2})
	if err != nil {
		panic(err)
	}
	defer g.Close()
	dir, _ := os.MkdirTemp("", "netloop-example")
	defer os.RemoveAll(dir)
	path := filepath.Join(dir, "echo.sock")
	ln, err := g.ListenUnix(path, func(l *eventloop.Loop, c *socket.UnixConn) {
		_, _ = netloop.Add(l, c, echo{}, netloop.Config{})
	})
	if err != nil {
		panic(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- g.Run(ctx, nil) }()

	c, _ := net.Dial("unix", path)
	fmt.Fprint(c, "over a unix socket")
	buf := make([]byte, 18)
	_, _ = io.ReadFull(c, buf)
	fmt.Printf("%s\n", buf)
	c.Close()
	_ = ln.Close()
	_, err = os.Stat(path)
	fmt.Println("socket file removed:", os.IsNotExist(err))
	cancel()
	<-done
	// Output:
	// over a unix socket
	// socket file removed: true
}

// A Group serves UDP: the PacketFunc gets each datagram with its sender,
// on a Loop, and replies on the socket. With ReusePort every Loop has a
// socket of its own on the port.
func ExampleGroup_ListenUDP() {
	g, err := netloop.NewGroup(netloop.GroupConfig{Loops: 2})
	if err != nil {
		panic(err)
	}
	defer g.Close()
	ln, err := g.ListenUDP("udp", "127.0.0.1:0",
		func(l *eventloop.Loop, pc *socket.UDPConn, data []byte, from net.Addr) {
			_, _ = pc.WriteTo(append([]byte("echo: "), data...), from)
		}, netloop.ReusePort())
	if err != nil {
		panic(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- g.Run(ctx, nil) }()

	c, _ := net.Dial("udp", ln.Addr().String())
	defer c.Close()
	_ = c.SetReadDeadline(time.Now().Add(10 * time.Second))
	fmt.Fprint(c, "a datagram")
	buf := make([]byte, 64)
	n, _ := c.Read(buf)
	fmt.Printf("%s\n", buf[:n])
	cancel()
	<-done
	// Output:
	// echo: a datagram
}
