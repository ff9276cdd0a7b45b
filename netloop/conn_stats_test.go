package netloop

import (
	"io"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/unipoll/unipoll/eventloop"
)

// Stats counts what moved each way, read from the handler: an echo of
// 100 KiB sent in 4 KiB writes read as much as it wrote, in at least one
// read and write each and no more system calls than bytes; Connected is
// the time of Add. The counters are final in CloseHandler.
func TestConnStats(t *testing.T) {
	l := newLoop(t, eventloop.Config{})
	start(t, l, nil)
	s, client := tcpClientPair(t)
	h := &statsEcho{closed: make(chan ConnStats, 1)}
	before := time.Now()
	c, err := Add(l, s, h, Config{})
	require.NoError(t, err)
	after := time.Now()

	const total = 100 << 10
	go func() {
		chunk := make([]byte, 4<<10)
		for range total / len(chunk) {
			if _, err := client.Write(chunk); err != nil {
				return
			}
		}
	}()
	_, err = io.ReadFull(client, make([]byte, total))
	require.NoError(t, err)

	var st ConnStats
	inCall(t, c, func(c *Conn) { st = c.Stats() })
	require.Equal(t, uint64(total), st.BytesRead)
	require.Equal(t, uint64(total), st.BytesWritten)
	require.GreaterOrEqual(t, st.Reads, uint64(1))
	require.GreaterOrEqual(t, st.Writes, uint64(1))
	require.LessOrEqual(t, st.Reads, uint64(total))
	require.False(t, st.Connected.Before(before) || st.Connected.After(after), "Connected %v, Add between %v and %v", st.Connected, before, after)

	_, err = client.Write([]byte("bye"))
	require.NoError(t, err)
	_, err = io.ReadFull(client, make([]byte, 3))
	require.NoError(t, err)
	require.NoError(t, c.Async(func(c *Conn) { c.Close() }))
	select {
	case final := <-h.closed:
		require.Equal(t, uint64(total+3), final.BytesRead)
		require.Equal(t, uint64(total+3), final.BytesWritten)
		require.Equal(t, st.Reads+1, final.Reads)
	case <-time.After(waitLimit):
		t.Fatalf("not closed within %v", waitLimit)
	}
	require.Equal(t, ConnStats{}, (*Conn)(nil).Stats())
}

// statsEcho echoes and reports the Conn's final Stats.
type statsEcho struct{ closed chan ConnStats }

func (e *statsEcho) Data(c *Conn, in []byte) int {
	n, _ := c.Write(in)
	return n
}

func (e *statsEcho) Closed(c *Conn, err error) { e.closed <- c.Stats() }
