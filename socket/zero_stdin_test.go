//go:build unix

package socket

import (
	"bytes"
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"strconv"
	"testing"

	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"

	"github.com/unipoll/unipoll/poll"
)

// A zero-value socket used to hold descriptor 0, so its Read read stdin and
// its Close closed stdin. The regression test gives a child process (this
// test binary, re-executed; see TestMain) a pipe as stdin with bytes waiting
// in it, lets the child call every method of every zero-value socket, and
// then has the child check that descriptor 0 is still that pipe and that
// the bytes are still unread. The child reports by its exit status.

const zeroChildEnv = "UNIPOLL_SOCKET_ZERO_CHILD"

// stdinBait is what the parent leaves in the child's stdin.
const stdinBait = "bait\n"

func TestZeroValueLeavesStdin(t *testing.T) {
	r, w, err := os.Pipe()
	require.NoError(t, err)
	_, err = w.WriteString(stdinBait)
	require.NoError(t, err)
	// Closed now, so that a child that reads stdin past the bait gets EOF
	// and fails the test instead of waiting for more.
	require.NoError(t, w.Close())
	var st unix.Stat_t
	require.NoError(t, unix.Fstat(int(r.Fd()), &st))

	ctx, cancel := context.WithTimeout(context.Background(), testDeadline)
	defer cancel()
	cmd := exec.CommandContext(ctx, os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), zeroChildEnv+"="+strconv.FormatUint(uint64(st.Ino), 10))
	cmd.Stdin = r // the pipe itself becomes the child's descriptor 0
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	err = cmd.Run()
	require.NoError(t, r.Close())
	require.NoError(t, err, "child:\n%s", out.String())
	require.Contains(t, out.String(), "stdin intact")
}

// zeroValueChild is the child's whole run; TestMain calls it instead of the
// tests. wantIno is the inode of the pipe the parent gave as stdin.
func zeroValueChild(wantIno string) int {
	// Every failure is reported, so that one run shows all that went wrong.
	status := 0
	fail := func(format string, a ...any) int {
		fmt.Fprintf(os.Stderr, "zero-value child: "+format+"\n", a...)
		status = 1
		return status
	}
	p, err := poll.New()
	if err != nil {
		return fail("poll.New: %v", err)
	}
	defer p.Close()
	b := make([]byte, 64)
	tc, tl, uc, xc, xl := new(TCPConn), new(TCPListener), new(UDPConn), new(UnixConn), new(UnixListener)
	for _, e := range []poll.Evented{tc, tl, uc, xc, xl} {
		if err := p.Register(e, 1, poll.Readable|poll.Writable, poll.Level); err == nil {
			fail("%T: Register of a zero value succeeded", e)
		}
	}
	errs := []error{}
	collect := func(_ int, err error) { errs = append(errs, err) }
	collect(tc.Read(b))
	collect(tc.Write([]byte("x")))
	collect(uc.Read(b))
	collect(uc.Write([]byte("x")))
	_, _, err = uc.ReadFrom(b)
	errs = append(errs, err)
	collect(uc.WriteTo([]byte("x"), &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1), Port: 9}))
	collect(xc.Read(b))
	collect(xc.Write([]byte("x")))
	_, err = tl.Accept()
	errs = append(errs, err)
	_, err = xl.Accept()
	errs = append(errs, err)
	errs = append(errs, tc.CloseRead(), tc.CloseWrite(), xc.CloseWrite(), tc.SetNoDelay(true), tc.ConnectError())
	errs = append(errs, tc.Close(), tl.Close(), uc.Close(), xc.Close(), xl.Close())
	for i, err := range errs {
		if err == nil {
			fail("call %d on a zero value succeeded", i)
		}
	}

	var st unix.Stat_t
	if err := unix.Fstat(0, &st); err != nil {
		return fail("stdin: %v (a zero-value Close closed it)", err)
	}
	if got := strconv.FormatUint(uint64(st.Ino), 10); got != wantIno {
		return fail("descriptor 0 is inode %s, not the parent's pipe %s", got, wantIno)
	}
	// Non-blocking, so that bait already consumed shows as EAGAIN rather
	// than a read that waits for the parent forever.
	if err := unix.SetNonblock(0, true); err != nil {
		return fail("stdin: %v", err)
	}
	n, err := unix.Read(0, b)
	if err != nil || string(b[:n]) != stdinBait {
		return fail("stdin read %q, %v; want %q (a zero-value Read consumed it)", b[:max(n, 0)], err, stdinBait)
	}
	if status == 0 {
		fmt.Println("stdin intact")
	}
	return status
}
