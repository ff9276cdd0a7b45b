//go:build linux

package main

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"net"
	"os/exec"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// prepareGainOrSkip builds gainecho/, skipping the test where this kernel
// gives no io_uring.
func prepareGainOrSkip(t *testing.T) func(cpu, port int) *exec.Cmd {
	t.Helper()
	start, err := prepareGain(testRunner(t))
	if errors.Is(err, errSkip) {
		t.Skip(err)
	}
	require.NoError(t, err)
	return start
}

// TestGainEcho runs gain's echo server, built with the linker flag it
// needs, in its own process and checks what it sends back, byte for byte:
// echoCheck's 16 B to 64 KiB messages on 16 connections at once, then
// bursts that each connection writes in one go as 200 separate 100-byte
// writes, so that gain's receives often find more data waiting in the
// socket (where it receives again before calling OnRead): every byte
// must come back, in order.
func TestGainEcho(t *testing.T) {
	start := prepareGainOrSkip(t)
	checkEchoServer(t, start, 16)
	checkEchoServerWith(t, start, 8, func(addr string, seed byte) error {
		return echoBurst(addr, seed, 200, 100)
	})
}

// echoBurst writes n messages of size bytes on one connection, one write
// each and without waiting for their echoes, and reads until all n*size
// bytes are back, checking them in order.
func echoBurst(addr string, seed byte, n, size int) error {
	c, err := net.Dial("tcp", addr)
	if err != nil {
		return err
	}
	defer c.Close()
	if err := c.SetDeadline(time.Now().Add(30 * time.Second)); err != nil {
		return err
	}
	want := make([]byte, n*size)
	for i := range want {
		want[i] = seed + byte(i*13)
	}
	werr := make(chan error, 1)
	go func() {
		for i := range n {
			if _, err := c.Write(want[i*size : (i+1)*size]); err != nil {
				werr <- err
				return
			}
		}
		werr <- nil
	}()
	got := make([]byte, len(want))
	if _, err := io.ReadFull(c, got); err != nil {
		return fmt.Errorf("after %d writes of %d bytes: %w", n, size, err)
	}
	if err := <-werr; err != nil {
		return err
	}
	if !bytes.Equal(got, want) {
		return errors.New("the echo of the burst differs")
	}
	return nil
}
