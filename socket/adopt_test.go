//go:build unix

package socket

import (
	"net"
	"os"
	"testing"

	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"

	"github.com/unipoll/unipoll/poll"
)

func TestFileTCPListenerFromNet(t *testing.T) {
	nl, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	f, err := nl.(*net.TCPListener).File()
	require.NoError(t, err)
	ln, err := FileTCPListener(f)
	require.NoError(t, err)
	closeIt(t, ln)
	// The adopted listener is independent of both originals.
	require.NoError(t, f.Close())
	require.NoError(t, nl.Close())
	require.Equal(t, nl.Addr().String(), ln.Addr().String())
	requireCloexec(t, ln.Fd())
	requireNonblock(t, ln.Fd())

	w := newPoller(t)
	require.NoError(t, w.p.Register(ln, tokListener, poll.Readable, poll.Edge))
	cli, err := DialTCP("tcp", ln.Addr().String())
	require.NoError(t, err)
	closeIt(t, cli)
	w.wait(tokListener, poll.Readable)
	srv, err := ln.Accept()
	require.NoError(t, err)
	closeIt(t, srv)

	// And a conn from a file, this time from the accepted socket's own
	// descriptor wrapped in an *os.File.
	nfd, err := unix.Dup(srv.Fd())
	require.NoError(t, err)
	f2 := os.NewFile(uintptr(nfd), "accepted")
	c2, err := FileTCPConn(f2)
	require.NoError(t, err)
	closeIt(t, c2)
	require.NoError(t, f2.Close())
	require.Equal(t, srv.RemoteAddr().String(), c2.RemoteAddr().String())
	require.NoError(t, w.p.Register(c2, tokServer, poll.Readable|poll.Writable, poll.Edge))
	require.NoError(t, w.p.Register(cli, tokClient, poll.Readable|poll.Writable, poll.Edge))
	w.writeAll(tokClient, cli, []byte("via file"))
	require.Equal(t, "via file", string(w.readN(tokServer, c2, 8)))
}

func TestAdoptChecksKind(t *testing.T) {
	ln, err := ListenTCP("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	closeIt(t, ln)
	_, err = AdoptTCPConn(ln.Fd())
	require.ErrorIs(t, err, ErrWrongSocketType, "a listener is not a conn")
	_, err = AdoptUnixConn(ln.Fd())
	require.ErrorIs(t, err, ErrWrongSocketType)

	a, b, err := Pair()
	require.NoError(t, err)
	closeIt(t, a)
	closeIt(t, b)
	_, err = AdoptTCPListener(a.Fd())
	require.ErrorIs(t, err, ErrWrongSocketType)
	_, err = AdoptTCPConn(a.Fd())
	require.ErrorIs(t, err, ErrWrongSocketType, "a Unix socket is not TCP")

	u, err := ListenUDP("udp", "127.0.0.1:0")
	require.NoError(t, err)
	closeIt(t, u)
	_, err = AdoptTCPConn(u.Fd())
	require.ErrorIs(t, err, ErrWrongSocketType)

	r, w, err := os.Pipe()
	require.NoError(t, err)
	defer r.Close()
	defer w.Close()
	_, err = FileTCPConn(r)
	require.ErrorIs(t, err, ErrWrongSocketType)
	require.ErrorIs(t, err, unix.ENOTSOCK)
	_, err = AdoptTCPConn(-1)
	require.ErrorIs(t, err, ErrWrongSocketType)
	_, err = FileUnixConn(nil)
	require.Error(t, err)
}

func TestAdoptUnixConnRaw(t *testing.T) {
	// A blocking, inheritable pair made by hand: adoption fixes both.
	fds, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_STREAM, 0)
	require.NoError(t, err)
	a, err := AdoptUnixConn(fds[0])
	require.NoError(t, err)
	closeIt(t, a)
	b, err := AdoptUnixConn(fds[1])
	require.NoError(t, err)
	closeIt(t, b)
	requireCloexec(t, a.Fd())
	requireNonblock(t, a.Fd())
	require.Equal(t, "", a.LocalAddr().String())

	w := newPoller(t)
	require.NoError(t, w.p.Register(a, tokClient, poll.Readable|poll.Writable, poll.Edge))
	require.NoError(t, w.p.Register(b, tokServer, poll.Readable|poll.Writable, poll.Edge))
	_, err = b.Read(make([]byte, 1))
	require.ErrorIs(t, err, ErrWouldBlock, "adopted descriptor is non-blocking")
	w.writeAll(tokClient, a, []byte("adopted"))
	require.Equal(t, "adopted", string(w.readN(tokServer, b, 7)))
}

func requireNonblock(t *testing.T, fd int) {
	t.Helper()
	fl, err := unix.FcntlInt(uintptr(fd), unix.F_GETFL, 0)
	require.NoError(t, err)
	require.NotZero(t, fl&unix.O_NONBLOCK, "descriptor %d is blocking", fd)
}

func requireCloexec(t *testing.T, fd int) {
	t.Helper()
	fl, err := unix.FcntlInt(uintptr(fd), unix.F_GETFD, 0)
	require.NoError(t, err)
	require.NotZero(t, fl&unix.FD_CLOEXEC, "descriptor %d is inherited by exec", fd)
}
