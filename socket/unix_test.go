//go:build unix

package socket

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/unipoll/unipoll/poll"
)

func TestUnixListenerRoundTrip(t *testing.T) {
	w := newPoller(t)
	path := filepath.Join(t.TempDir(), "s.sock")
	ln, err := ListenUnix(path)
	require.NoError(t, err)
	closeIt(t, ln)
	require.Equal(t, path, ln.Addr().String())
	require.NoError(t, w.p.Register(ln, tokListener, poll.Readable, poll.Edge))

	_, err = ListenUnix(path)
	require.Error(t, err, "the path is taken")

	cli, err := DialUnix(path)
	require.NoError(t, err)
	closeIt(t, cli)
	require.Equal(t, path, cli.RemoteAddr().String())
	require.NoError(t, w.p.Register(cli, tokClient, poll.Readable|poll.Writable, poll.Edge))

	w.wait(tokListener, poll.Readable)
	srv, err := ln.Accept()
	require.NoError(t, err)
	closeIt(t, srv)
	require.Equal(t, path, srv.LocalAddr().String())
	require.NoError(t, w.p.Register(srv, tokServer, poll.Readable|poll.Writable, poll.Edge))
	_, err = ln.Accept()
	require.ErrorIs(t, err, ErrWouldBlock)

	w.writeAll(tokClient, cli, []byte("hello over unix"))
	require.Equal(t, "hello over unix", string(w.readN(tokServer, srv, 15)))
	require.NoError(t, cli.CloseWrite())
	w.readEOF(tokServer, srv)
	w.writeAll(tokServer, srv, []byte("bye"))
	require.Equal(t, "bye", string(w.readN(tokClient, cli, 3)))

	require.NoError(t, ln.Close())
	_, err = os.Lstat(path)
	require.ErrorIs(t, err, os.ErrNotExist, "Close removes the file it created")
}

func TestUnixListenerKeepsOthersFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "s.sock")
	ln, err := ListenUnix(path)
	require.NoError(t, err)
	// Someone replaces the socket file; Close must not remove theirs.
	require.NoError(t, os.Remove(path))
	require.NoError(t, os.WriteFile(path, []byte("not ours"), 0o600))
	require.NoError(t, ln.Close())
	_, err = os.Lstat(path)
	require.NoError(t, err)
}

func TestPairRoundTrip(t *testing.T) {
	w := newPoller(t)
	a, b, err := Pair()
	require.NoError(t, err)
	closeIt(t, a)
	closeIt(t, b)
	require.NoError(t, w.p.Register(a, tokClient, poll.Readable|poll.Writable, poll.Edge))
	require.NoError(t, w.p.Register(b, tokServer, poll.Readable|poll.Writable, poll.Level))

	w.writeAll(tokClient, a, []byte("a to b"))
	require.Equal(t, "a to b", string(w.readN(tokServer, b, 6)))
	w.writeAll(tokServer, b, []byte("b to a"))
	require.Equal(t, "b to a", string(w.readN(tokClient, a, 6)))
	require.NoError(t, b.Close())
	w.readEOF(tokClient, a)
}
