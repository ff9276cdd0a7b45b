package netloop

import (
	"bytes"
	"errors"
	"log/slog"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/unipoll/unipoll/eventloop"
)

// syncBuffer is a bytes.Buffer for a slog handler written on the Loop
// and read by the test.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.String()
}

// Config.Logger hears, at Debug, each Conn that ends by a timeout (with
// the limit) or with a reset it sent, with its error and addresses; an
// ordinary Close writes nothing.
func TestConnLogger(t *testing.T) {
	var buf syncBuffer
	lg := slog.New(slog.NewTextHandler(&buf, &slog.HandlerOptions{Level: slog.LevelDebug}))
	l := newLoop(t, eventloop.Config{})
	start(t, l, nil)

	end := func(cfg Config, f func(*Conn)) (local, remote string, err error) {
		s, _ := tcpClientPair(t)
		local, remote = s.LocalAddr().String(), s.RemoteAddr().String()
		h := &closeRec{ch: make(chan closeAt, 1)}
		cfg.Logger = lg
		c, aerr := Add(l, s, h, cfg)
		require.NoError(t, aerr)
		if f != nil {
			require.NoError(t, c.Async(f))
		}
		return local, remote, closedWithin(t, h, "logged").err
	}

	_, _, err := end(Config{}, func(c *Conn) { c.Close() })
	require.NoError(t, err)
	require.Empty(t, buf.String(), "an ordinary close is not logged")

	local, remote, err := end(Config{ReadTimeout: ruleLimit}, nil)
	require.ErrorIs(t, err, ErrReadTimeout)
	line := lastLine(buf.String())
	for _, want := range []string{"level=DEBUG", `msg="netloop: conn timed out"`, `err="` + ErrReadTimeout.Error() + `"`,
		"local=" + local, "remote=" + remote, "timeout=" + ruleLimit.String()} {
		require.Contains(t, line, want)
	}

	boom := errors.New("boom")
	local, _, err = end(Config{}, func(c *Conn) { c.Abort(boom) })
	require.ErrorIs(t, err, boom)
	line = lastLine(buf.String())
	for _, want := range []string{"level=DEBUG", `msg="netloop: conn reset"`, "err=boom", "local=" + local} {
		require.Contains(t, line, want)
	}
	require.NotContains(t, line, "timeout=")

	// Above Debug, nothing.
	buf = syncBuffer{}
	lg = slog.New(slog.NewTextHandler(&buf, &slog.HandlerOptions{Level: slog.LevelInfo}))
	_, _, err = end(Config{}, func(c *Conn) { c.Abort(boom) })
	require.ErrorIs(t, err, boom)
	require.Empty(t, buf.String())
}

// lastLine is the last line of s.
func lastLine(s string) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	return lines[len(lines)-1]
}
