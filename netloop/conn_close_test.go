package netloop

import (
	"io"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/unipoll/unipoll/eventloop"
	"github.com/unipoll/unipoll/internal/testsupport"
)

// Closing the Loop closes the Conns still on it, as it removes every
// source: the Stream is closed (the peer reads what was sent, then the
// end), CloseHandler hears nil once, Conns counts none. Without a Run, and
// with a Run that Close ends (the release then happens as Run returns).
func TestCloseClosesConns(t *testing.T) {
	for _, during := range []bool{false, true} {
		t.Run(map[bool]string{false: "idle", true: "during Run"}[during], func(t *testing.T) {
			l, err := eventloop.New(eventloop.Config{})
			require.NoError(t, err)
			var r *testsupport.Running
			if during {
				r = start(t, l, nil)
			}
			s, client := clientPair(t)
			h := newEcho()
			c, err := Add(l, s, h, Config{})
			require.NoError(t, err)
			if during {
				// (Unread input would make the close a reset, as a
				// socket's close is with input left unread.)
				_, err = client.Write([]byte("ping"))
				require.NoError(t, err)
				got := make([]byte, 4)
				_, err = io.ReadFull(client, got)
				require.NoError(t, err)
				require.Equal(t, "ping", string(got))
			}
			require.NoError(t, l.Close())
			if during {
				require.NoError(t, r.Stop(t))
			}
			select {
			case err := <-h.closed:
				require.NoError(t, err)
			case <-time.After(waitLimit):
				t.Fatalf("CloseHandler not called %v after the Loop's Close (Closed() = %v, Conns() = %d)", waitLimit, c.Closed(), Conns(l))
			}
			require.True(t, c.Closed())
			require.Zero(t, Conns(l))
			rest, err := io.ReadAll(client)
			require.NoError(t, err, "the peer's read after the Loop's Close")
			require.Empty(t, rest)
		})
	}
}
