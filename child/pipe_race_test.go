//go:build linux

package child

import (
	"bytes"
	"errors"
	"io"
	"sync"
	"syscall"
	"testing"

	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"

	"github.com/unipoll/unipoll/internal/onpoll/polltest"
	"github.com/unipoll/unipoll/poll"
)

// Close racing Read, Write, Register and Deregister on other goroutines
// (rules P1-P2 of pipe_end.go): every call works or fails with ErrClosed,
// never with EBADF; and no descriptor number is used once Close has given
// it back: pipes opened at once afterwards, which take the freed numbers,
// neither lose a byte to a late Read nor gain one from a late Write.
func TestPipeCloseRaces(t *testing.T) {
	chunk := bytes.Repeat([]byte("w"), 512)
	marker := []byte("marker!\n")
	for range 10 {
		p := polltest.New(t)
		_, pipes := startPiped(t, Stdin|Stdout, "exec cat")
		var wg sync.WaitGroup
		errs := make(chan error, 3)
		busy := make(chan struct{}, 3)
		loop := func(f func() error) {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for i := 0; ; i++ {
					err := f()
					if errors.Is(err, ErrClosed) {
						return
					}
					if err != nil {
						errs <- err
						return
					}
					if i == 50 {
						busy <- struct{}{}
					}
				}
			}()
		}
		buf := make([]byte, 256)
		loop(func() error {
			_, err := pipes.Stdout.Read(buf)
			if err == ErrWouldBlock || err == io.EOF {
				return nil
			}
			return err
		})
		loop(func() error {
			_, err := pipes.Stdin.Write(chunk)
			if err == ErrWouldBlock || errors.Is(err, syscall.EPIPE) { // cat ends once its stdout is closed
				return nil
			}
			return err
		})
		loop(func() error {
			if err := p.Register(pipes.Stdout, 1, poll.Readable, poll.Edge); err != nil {
				return err
			}
			return p.Deregister(pipes.Stdout)
		})
		for range 3 { // each loop well under way (or failed)
			select {
			case <-busy:
			case err := <-errs:
				require.NoError(t, err)
			}
		}
		require.NoError(t, pipes.Stdout.Close())
		require.NoError(t, pipes.Stdin.Close())
		for range 8 { // the freed numbers go to new pipes while the loops may still run
			var fds [2]int
			require.NoError(t, unix.Pipe2(fds[:], unix.O_NONBLOCK|unix.O_CLOEXEC))
			n, err := unix.Write(fds[1], marker)
			require.NoError(t, err)
			require.Equal(t, len(marker), n)
			got := make([]byte, 64)
			n, err = unix.Read(fds[0], got)
			require.NoError(t, err)
			require.Equal(t, string(marker), string(got[:n]), "a closed pipe's Read or Write reached a new pipe")
			_, err = unix.Read(fds[0], got)
			require.ErrorIs(t, err, unix.EAGAIN, "bytes written into a new pipe")
			require.NoError(t, unix.Close(fds[0]))
			require.NoError(t, unix.Close(fds[1]))
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			require.NoError(t, err)
		}
	}
}
