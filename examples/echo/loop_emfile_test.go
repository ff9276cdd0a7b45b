//go:build linux

package main

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"strconv"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"
)

// The EventLoop mode's listener pauses when the process runs out of
// descriptors, as server.go's does: TestEMFILEBackoff's scenario, with
// the server of loop_server.go in the child.
const loopEmfileChildEnv = "UNIPOLL_ECHO_LOOP_EMFILE_CHILD"

func TestLoopEMFILEBackoff(t *testing.T) {
	cmd := exec.Command(os.Args[0], "-test.run=^TestLoopEMFILEChild$", "-test.count=1")
	cmd.Env = append(os.Environ(), loopEmfileChildEnv+"=1")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	stdin, err := cmd.StdinPipe()
	require.NoError(t, err)
	stdout, err := cmd.StdoutPipe()
	require.NoError(t, err)
	require.NoError(t, cmd.Start())
	lines := bufio.NewScanner(stdout)
	defer func() {
		_ = stdin.Close()
		for lines.Scan() {
		}
		_ = cmd.Wait()
		if t.Failed() {
			t.Logf("child stderr:\n%s", stderr.String())
		}
	}()

	addr := childValue(t, lines, "ADDR ")
	var dialed, wg sync.WaitGroup
	allDialed := make(chan struct{})
	errs := make(chan error, emfileClients)
	for i := range emfileClients {
		wg.Add(1)
		dialed.Add(1)
		go func() {
			defer wg.Done()
			c, err := net.Dial("tcp", addr)
			dialed.Done()
			if err != nil {
				errs <- fmt.Errorf("client %d: %w", i, err)
				return
			}
			defer c.Close()
			<-allDialed
			if err := ping(c, fmt.Sprintf("hello %d", i)); err != nil {
				errs <- fmt.Errorf("client %d: %w", i, err)
			}
		}()
	}
	dialed.Wait()
	close(allDialed)
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}

	require.NoError(t, stdin.Close())
	pauses, err := strconv.Atoi(childValue(t, lines, "PAUSES "))
	require.NoError(t, err)
	require.NoError(t, cmd.Wait())
	t.Logf("accept paused %d times for %d clients", pauses, emfileClients)
	require.Positive(t, pauses, "the child never ran out of descriptors")
	require.Less(t, pauses, 100)
}

// TestLoopEMFILEChild is the server side of TestLoopEMFILEBackoff; it does
// nothing unless run by it.
func TestLoopEMFILEChild(t *testing.T) {
	if os.Getenv(loopEmfileChildEnv) != "1" {
		t.Skip("helper process for TestLoopEMFILEBackoff")
	}
	srv, err := newLoopServer("127.0.0.1:0", 1, false, func(f string, a ...any) { fmt.Fprintf(os.Stderr, f+"\n", a...) })
	require.NoError(t, err)
	leaveRoom(t, emfileRoom)
	go func() {
		_, _ = io.Copy(io.Discard, os.Stdin)
		srv.Stop()
	}()
	fmt.Printf("ADDR %s\n", srv.Addr())
	require.NoError(t, srv.Run())
	fmt.Printf("PAUSES %d\n", srv.acceptPauses())
}
