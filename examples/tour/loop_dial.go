package main

import (
	"context"
	"fmt"
	"net"
	"time"

	"github.com/unipoll/unipoll/eventloop"
	"github.com/unipoll/unipoll/netloop"
	"github.com/unipoll/unipoll/socket"
)

// dialStop is the Loop tour's outbound connection: netloop.Dial connects
// from the Loop to a listener of package net's (which greets and closes),
// and done runs on the Loop with the live Conn before its handler hears
// the greeting. No goroutine of the Loop's waits for the connect: the
// Loop's Poll watches it, and its timeout is on the Loop's timing wheel.
func dialStop(l *eventloop.Loop, heard func(l *eventloop.Loop, kind, what string), say sayFunc) (stop func(), err error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	served := make(chan struct{})
	go func() {
		defer close(served)
		c, err := ln.Accept()
		if err != nil {
			return
		}
		_, _ = c.Write([]byte("hello from the dialed server"))
		_ = c.Close()
	}()
	h := netloop.HandlerFunc(func(c *netloop.Conn, in []byte) int {
		heard(c.Loop(), "Dial", fmt.Sprintf("read %q", in))
		return len(in)
	})
	d := netloop.Dialer{Timeout: 5 * time.Second}
	err = d.Dial(context.Background(), l, "tcp", ln.Addr().String(), h, func(c *netloop.Conn, err error) {
		if err != nil {
			say("  dial failed: %v", err)
			return
		}
		say("  dial: connected to %s, on the Loop", c.Stream().(*socket.TCPConn).RemoteAddr())
	})
	if err != nil {
		_ = ln.Close()
		return nil, err
	}
	say("Dialed a TCP listener from the Loop (netloop.Dial, a 5s timeout).")
	return func() { _ = ln.Close(); <-served }, nil
}
