//go:build unix

package socket

import (
	"errors"
	"io"
	"os"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/unipoll/unipoll/poll"
)

// TestMain runs the tests, or, in the child process of
// TestZeroValueLeavesStdin, only that child's checks.
func TestMain(m *testing.M) {
	if ino := os.Getenv(zeroChildEnv); ino != "" {
		os.Exit(zeroValueChild(ino))
	}
	goleak.VerifyTestMain(m)
}

// testDeadline bounds every wait in these tests; a healthy run needs
// milliseconds, a slow CI machine under -race perhaps a second.
const testDeadline = 10 * time.Second

// poller wraps a Poll for tests: it keeps the readiness of tokens it saw
// while waiting for another one, so that an edge is never dropped.
type poller struct {
	t       *testing.T
	p       *poll.Poll
	ev      *poll.Events
	pending map[poll.Token]poll.Ready
}

func newPoller(t *testing.T) *poller {
	t.Helper()
	p, err := poll.New()
	require.NoError(t, err)
	t.Cleanup(func() { _ = p.Close() })
	return &poller{t: t, p: p, ev: poll.NewEvents(64), pending: map[poll.Token]poll.Ready{}}
}

// wait polls until tok is reported with any kind in want, and returns (and
// forgets) everything reported for tok so far.
func (w *poller) wait(tok poll.Token, want poll.Ready) poll.Ready {
	w.t.Helper()
	deadline := time.Now().Add(testDeadline)
	for {
		if r := w.pending[tok]; r&want != 0 {
			delete(w.pending, tok)
			return r
		}
		left := time.Until(deadline)
		require.Positive(w.t, left, "no %s event for token %d", want, tok)
		_, err := w.p.Poll(w.ev, left)
		require.NoError(w.t, err)
		for e := range w.ev.All() {
			w.pending[e.Token] |= e.Ready
		}
	}
}

// readN reads exactly n bytes from r, registered under tok. It reads as an
// Edge caller must (see TestEdgeReadPassEnds): it waits for Readable only
// after a read that would block or came back short, and it always reads
// into its whole buffer, so a pass never stops after a full read. More than
// n bytes waiting is a failure.
func (w *poller) readN(tok poll.Token, r io.Reader, n int) []byte {
	w.t.Helper()
	out := make([]byte, 0, n)
	buf := make([]byte, 64<<10)
	for {
		m, err := r.Read(buf)
		out = append(out, buf[:m]...)
		require.LessOrEqual(w.t, len(out), n, "more bytes than expected")
		if !errors.Is(err, ErrWouldBlock) {
			require.NoError(w.t, err)
			if m == len(buf) {
				continue // a full read: the pass goes on
			}
		}
		if len(out) == n {
			return out
		}
		w.wait(tok, poll.Readable)
	}
}

// readEOF reads from r until io.EOF, which it expects before any data.
func (w *poller) readEOF(tok poll.Token, r io.Reader) {
	w.t.Helper()
	var b [16]byte
	for {
		n, err := r.Read(b[:])
		require.Zero(w.t, n, "data where EOF was expected")
		if errors.Is(err, ErrWouldBlock) {
			w.wait(tok, poll.Readable)
			continue
		}
		require.ErrorIs(w.t, err, io.EOF)
		return
	}
}

// writeAll writes b to wr, registered under tok, waiting for Writable
// whenever it would block.
func (w *poller) writeAll(tok poll.Token, wr io.Writer, b []byte) {
	w.t.Helper()
	for len(b) > 0 {
		n, err := wr.Write(b)
		b = b[n:]
		if errors.Is(err, ErrWouldBlock) {
			w.wait(tok, poll.Writable)
			continue
		}
		require.NoError(w.t, err)
	}
}

// closeIt closes c at the end of the test, tolerating an earlier Close.
func closeIt(t *testing.T, c io.Closer) {
	t.Cleanup(func() {
		if err := c.Close(); err != nil && !errors.Is(err, ErrClosed) {
			t.Errorf("close: %v", err)
		}
	})
}

// TestBackendInUse makes sure UNIPOLL_BACKEND reached the Poll, so that a
// run meant for one backend does not silently test the default one.
func TestBackendInUse(t *testing.T) {
	w := newPoller(t)
	if want := os.Getenv("UNIPOLL_BACKEND"); want != "" {
		require.Equal(t, want, w.p.Backend())
	}
	t.Logf("backend %s", w.p.Backend())
}
