package netloop

import (
	"context"
	"os"
	"strconv"
	"sync/atomic"
	"syscall"
	"testing"

	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"

	"github.com/unipoll/unipoll/eventloop"
)

// 1,000 dials at once from one Loop (started by one of its handlers) to
// one listener: every one connects, and every done runs exactly once.
func TestDialThousand(t *testing.T) {
	const n = 1000
	l := newLoop(t, eventloop.Config{})
	start(t, l, nil)
	ln := listenTCP(t)
	acceptAll(t, ln)
	addr := ln.Addr().String()

	var calls [n]atomic.Int32
	var ok, failed atomic.Int32
	var firstErr atomic.Pointer[error]
	require.NoError(t, l.Post(func(l *eventloop.Loop) {
		for i := range n {
			err := Dial(context.Background(), l, "tcp", addr, newEcho(), Config{}, func(c *Conn, err error) {
				calls[i].Add(1)
				if err != nil {
					firstErr.CompareAndSwap(nil, &err)
					failed.Add(1)
					return
				}
				ok.Add(1)
				c.Close()
			})
			if err != nil {
				firstErr.CompareAndSwap(nil, &err)
				failed.Add(1)
			}
		}
	}))
	eventually(t, "every dial's done", func() bool { return ok.Load()+failed.Load() == n })
	if p := firstErr.Load(); p != nil {
		require.NoError(t, *p)
	}
	quiesce(t, l)
	for i := range calls {
		require.Equal(t, int32(1), calls[i].Load(), "done calls of dial %d", i)
	}
	eventually(t, "every Conn closed", func() bool { return Conns(l) == 0 && l.Sources() == 1 })
}

// Out of descriptors while dialing: done hears EMFILE (the socket could
// not be made), and once descriptors are free again a dial connects.
// The descriptor table is filled under a lowered soft limit, both undone
// at the end; nothing else in the test binary runs meanwhile.
func TestDialEMFILE(t *testing.T) {
	l := newLoop(t, eventloop.Config{})
	start(t, l, nil)
	ln := listenTCP(t)
	acceptAll(t, ln)
	addr := ln.Addr().String()
	fillers := fillDescriptors(t)

	r := newDialResult()
	require.NoError(t, Dial(context.Background(), l, "tcp", addr, newEcho(), Config{}, r.done))
	o := r.wait(t, l)
	require.ErrorIs(t, o.err, syscall.EMFILE)
	require.Nil(t, o.c)

	for _, fd := range fillers[:8] { // room for the dial and the accept
		require.NoError(t, unix.Close(fd))
	}
	clear(fillers[:8])
	r = newDialResult()
	require.NoError(t, Dial(context.Background(), l, "tcp", addr, newEcho(), Config{}, r.done))
	o = r.wait(t, l)
	require.NoError(t, o.err)
	require.NoError(t, o.c.Async(func(c *Conn) { c.Close() }))
	eventually(t, "the Conn closed", func() bool { return Conns(l) == 0 })
}

// fillDescriptors lowers the soft descriptor limit to a little above the
// highest descriptor open now and opens /dev/null until the table is
// full. It returns the descriptors it opened; the test's end closes
// those the caller has not closed (and cleared to 0), and restores the
// limit.
func fillDescriptors(t *testing.T) []int {
	t.Helper()
	var old unix.Rlimit
	require.NoError(t, unix.Getrlimit(unix.RLIMIT_NOFILE, &old))
	ents, err := os.ReadDir("/proc/self/fd")
	if os.IsNotExist(err) {
		t.Skip("no /proc/self/fd to size the descriptor limit from")
	}
	require.NoError(t, err)
	highest := 0
	for _, e := range ents {
		if fd, err := strconv.Atoi(e.Name()); err == nil {
			highest = max(highest, fd)
		}
	}
	lowered := old
	setLimit(&lowered.Cur, highest+64)
	require.NoError(t, unix.Setrlimit(unix.RLIMIT_NOFILE, &lowered))
	var fds []int
	t.Cleanup(func() {
		for _, fd := range fds {
			if fd > 0 {
				_ = unix.Close(fd)
			}
		}
		require.NoError(t, unix.Setrlimit(unix.RLIMIT_NOFILE, &old))
	})
	for {
		fd, err := unix.Open("/dev/null", unix.O_RDONLY|unix.O_CLOEXEC, 0)
		if err == unix.EMFILE {
			break
		}
		require.NoError(t, err)
		fds = append(fds, fd)
	}
	require.GreaterOrEqual(t, len(fds), 8)
	return fds
}
