package main

import (
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/unipoll/unipoll/eventloop"
	"github.com/unipoll/unipoll/netloop"
	"github.com/unipoll/unipoll/socket"
)

// tourConn is the protocol of the loop tour's Conn (package netloop): it
// echoes what its client sends and, when the Loop's drain begins
// (netloop.Shutdown), says goodbye and closes once that is written.
type tourConn struct {
	heard func(l *eventloop.Loop, kind, what string)
}

func (t tourConn) Data(c *netloop.Conn, in []byte) int {
	t.heard(c.Loop(), "Conn", fmt.Sprintf("echoing %q", in))
	_, _ = c.Write(in) // queued, written at the end of the call
	return len(in)
}

func (t tourConn) Draining(c *netloop.Conn) {
	st := c.Stats() // the Conn's counters, read in its own call
	t.heard(c.Loop(), "Conn", fmt.Sprintf("draining after %d bytes in and %d out", st.BytesRead, st.BytesWritten))
	_, _ = c.WriteString(" goodbye")
	c.Close()
}

// addConn puts one end of a socket pair on l as a Conn and returns the
// other end, the client's.
func addConn(l *eventloop.Loop, heard func(*eventloop.Loop, string, string)) (*socket.UnixConn, error) {
	server, client, err := socket.Pair()
	if err != nil {
		return nil, err
	}
	// A client that stops reading is cut off with a reset after 5 s,
	// rather than holding its queued output (and the drain) for ever.
	if _, err := netloop.Add(l, server, tourConn{heard}, netloop.Config{WriteTimeout: 5 * time.Second}); err != nil {
		return nil, errors.Join(err, client.Close())
	}
	return client, nil
}

// readToEnd reads what the Conn sent its client, once the Conn has
// closed: all of it waits in the socket, then the end of the stream.
func readToEnd(client *socket.UnixConn) (string, error) {
	var got []byte
	buf := make([]byte, 64)
	for {
		n, err := client.Read(buf)
		got = append(got, buf[:n]...)
		if err == io.EOF {
			return string(got), nil
		}
		if err != nil {
			return string(got), err
		}
	}
}
