package main

import (
	"strings"
	"testing"
)

func TestLoopTour(t *testing.T) {
	var out strings.Builder
	if err := loopTour(&out); err != nil {
		t.Fatalf("loop tour failed: %v\n%s", err, out.String())
	}
	for _, want := range []string{
		`socket: read "hello through the kernel"`,
		`channel: received "hello through a channel"`,
		"Registration: set by another goroutine",
		"delay: fired by the timing wheel",
		`timer: "a timeout set on a Timer" expired`,
		"AfterFunc: run by the Loop's timer",
		"Post: a function from another goroutine",
		"signal: user defined signal 2",
		"child: pid ",
		"exit status 4; reaped by cmd.Wait",
		`child output: read "hello from a child\n"`,
		`Conn: echoing "hello to a Conn"`,
		`Conn: draining after 15 bytes in and 15 out`,
		`its client read "hello to a Conn goodbye", then the end`,
		`Dial: read "hello from the dialed server"`,
		"dial: connected to 127.0.0.1:",
		"TLS: handshake done, TLS 1.3",
		`TLS: read "hello over TLS"`,
	} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("loop tour output lacks %q:\n%s", want, out.String())
		}
	}
}
