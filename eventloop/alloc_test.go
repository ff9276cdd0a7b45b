package eventloop

import (
	"testing"

	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"

	"github.com/unipoll/unipoll/poll"
	"github.com/unipoll/unipoll/socket"
)

// chanSource signals every call on a channel, so that the test can wait
// for the dispatch it caused.
type chanSource chan struct{}

func (c chanSource) Ready(*Loop, poll.Event) Action {
	c <- struct{}{}
	return Keep
}

// In steady state the Loop allocates nothing per dispatched event: not
// for a handler's event, a Conn's message or a posted function (the
// issue's "0 allocations per dispatched event"). A running Loop is driven
// from the test's goroutine, which waits for each dispatch before the
// next; testing.AllocsPerRun counts every goroutine's allocations, the
// Loop's included.
func TestNoAllocationPerEvent(t *testing.T) {
	l := newLoop(t, Config{})
	src := newRegSource(t)
	called := make(chanSource, 1)
	_, err := l.Add(src.reg, poll.Readable, poll.Edge, called)
	require.NoError(t, err)

	// The client end blocks, so that a read waits for the echo.
	fds, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_STREAM, 0)
	require.NoError(t, err)
	unix.CloseOnExec(fds[0]) // not SOCK_CLOEXEC, which darwin lacks
	unix.CloseOnExec(fds[1])
	server, err := socket.AdoptUnixConn(fds[0])
	require.NoError(t, err)
	client := fds[1]
	t.Cleanup(func() { _ = server.Close(); _ = unix.Close(client) })
	_, err = l.AddConn(server, echoConn{}, ConnConfig{})
	require.NoError(t, err)

	posted := make(chan struct{}, 1)
	task := func(*Loop) { posted <- struct{}{} }
	start(t, l, nil)

	msg := []byte("0123456789abcdef")
	buf := make([]byte, len(msg))
	cases := []struct {
		name string
		one  func()
	}{
		{"handler", func() {
			require.NoError(t, src.set.SetReadiness(poll.Readable))
			<-called
		}},
		{"conn", func() {
			_, err := unix.Write(client, msg)
			require.NoError(t, err)
			for got := 0; got < len(buf); {
				n, err := unix.Read(client, buf[got:])
				require.NoError(t, err)
				require.NotZero(t, n, "the echo ended early")
				got += n
			}
		}},
		{"post", func() {
			require.NoError(t, l.Post(task))
			<-posted
		}},
	}
	for _, c := range cases {
		for range 100 { // warm up: buffers, the run queue, the wheel
			c.one()
		}
		if a := testing.AllocsPerRun(1000, c.one); a != 0 {
			t.Errorf("%s: %v allocations per event", c.name, a)
		}
	}
}
