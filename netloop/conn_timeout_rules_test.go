package netloop

import (
	"io"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/unipoll/unipoll/eventloop"
)

// ruleLimit is the timeout of the rule tests: short, since each waits a
// few of them, and long against the wheel's tick.
const ruleLimit = 100 * time.Millisecond

// closedWithin waits up to waitLimit for h's close and returns it.
func closedWithin(t *testing.T, h *closeRec, what string) closeAt {
	t.Helper()
	select {
	case got := <-h.ch:
		return got
	case <-time.After(waitLimit):
		t.Fatalf("%s: the Conn was not closed within %v", what, waitLimit)
	}
	return closeAt{}
}

// openFor requires that h's Conn is not closed for d.
func openFor(t *testing.T, h *closeRec, d time.Duration, what string) {
	t.Helper()
	select {
	case got := <-h.ch:
		t.Fatalf("%s: the Conn was closed (%v) within %v", what, got.err, d)
	case <-time.After(d):
	}
}

// inCall runs f among c's calls and waits for it.
func inCall(t *testing.T, c *Conn, f func(c *Conn)) {
	t.Helper()
	done := make(chan struct{})
	require.NoError(t, c.Async(func(c *Conn) {
		f(c)
		close(done)
	}))
	select {
	case <-done:
	case <-time.After(waitLimit):
		t.Fatalf("an Async function did not run within %v", waitLimit)
	}
}

// ReadTimeout does not count the time a Conn does not read: paused by
// PauseRead it outlives its ReadTimeout several times over; once reading
// resumes, the clock starts from zero and the silent peer's Conn closes
// with ErrReadTimeout no earlier than a ReadTimeout after the resume.
func TestReadTimeoutStopsWhilePaused(t *testing.T) {
	l := newLoop(t, eventloop.Config{})
	start(t, l, nil)
	s, _ := clientPair(t)
	h := &closeRec{ch: make(chan closeAt, 1)}
	c, err := Add(l, s, h, Config{})
	require.NoError(t, err)
	// Set from the handler with the pause, so the clock never ran unpaused.
	inCall(t, c, func(c *Conn) {
		c.PauseRead()
		require.NoError(t, c.SetReadTimeout(ruleLimit))
	})
	openFor(t, h, 4*ruleLimit, "paused with a ReadTimeout")
	resumed := time.Now()
	require.NoError(t, c.Async(func(c *Conn) { c.ResumeRead() }))
	got := closedWithin(t, h, "resumed")
	require.ErrorIs(t, got.err, ErrReadTimeout)
	require.GreaterOrEqual(t, got.at.Sub(resumed), ruleLimit, "closed before a ReadTimeout after the resume")
}

// Back pressure stops reading, so it stops ReadTimeout too: a peer that
// sends nothing and reads nothing keeps the Conn above HighWater, and
// WriteTimeout is the limit that closes it (ErrWriteTimeout), though
// ReadTimeout is the shorter.
func TestBackPressureIsWriteTimeouts(t *testing.T) {
	l := newLoop(t, eventloop.Config{})
	start(t, l, nil)
	s, _ := clientPair(t)
	h := &closeRec{ch: make(chan closeAt, 1)}
	c, err := Add(l, s, h, Config{MaxWriteQueue: 16 << 20, HighWater: 64 << 10})
	require.NoError(t, err)
	var began time.Time
	inCall(t, c, func(c *Conn) {
		_, err := c.Write(make([]byte, 8<<20))
		require.NoError(t, err)
		require.NoError(t, c.SetReadTimeout(ruleLimit))
		require.NoError(t, c.SetWriteTimeout(4*ruleLimit))
		began = time.Now()
	})
	got := closedWithin(t, h, "above HighWater")
	require.ErrorIs(t, got.err, ErrWriteTimeout)
	require.GreaterOrEqual(t, got.at.Sub(began), 4*ruleLimit)
}

// IdleTimeout counts whatever the reason nothing moves: a paused Conn
// with nothing queued is idle.
func TestIdleTimeoutRunsWhilePaused(t *testing.T) {
	l := newLoop(t, eventloop.Config{})
	start(t, l, nil)
	s, _ := clientPair(t)
	h := &closeRec{ch: make(chan closeAt, 1)}
	c, err := Add(l, s, h, Config{})
	require.NoError(t, err)
	var began time.Time
	inCall(t, c, func(c *Conn) {
		c.PauseRead()
		require.NoError(t, c.SetIdleTimeout(ruleLimit))
		began = time.Now()
	})
	got := closedWithin(t, h, "paused with an IdleTimeout")
	require.ErrorIs(t, got.err, ErrIdleTimeout)
	require.GreaterOrEqual(t, got.at.Sub(began), ruleLimit)
}

// WriteTimeout runs only while output is queued: a Conn with nothing to
// write outlives it, however silent its peer; one that Closes with output
// its peer never reads is closed by it.
func TestWriteTimeoutOnlyWhileQueued(t *testing.T) {
	l := newLoop(t, eventloop.Config{})
	start(t, l, nil)
	s, _ := clientPair(t)
	h := &closeRec{ch: make(chan closeAt, 1)}
	c, err := Add(l, s, h, Config{WriteTimeout: ruleLimit, MaxWriteQueue: 16 << 20})
	require.NoError(t, err)
	openFor(t, h, 4*ruleLimit, "nothing queued")
	var began time.Time
	inCall(t, c, func(c *Conn) {
		_, err := c.Write(make([]byte, 8<<20))
		require.NoError(t, err)
		c.Close()
		began = time.Now()
	})
	got := closedWithin(t, h, "Close with output the peer does not read")
	require.ErrorIs(t, got.err, ErrWriteTimeout)
	require.GreaterOrEqual(t, got.at.Sub(began), ruleLimit)
}

// WriteTimeout's clock starts again at each write that takes some: a
// reader that takes its data in bursts, never pausing as long as the
// limit, is served the whole of a transfer that lasts several limits.
// (Only a reader that did pause that long, the machine being loaded, may
// rightly be cut off.)
func TestWriteTimeoutRestartsOnProgress(t *testing.T) {
	const (
		limit = 4 * ruleLimit
		total = 4 << 20
		burst = 256 << 10
		pause = ruleLimit // the reader's pace, not synchronisation
	)
	l := newLoop(t, eventloop.Config{})
	start(t, l, nil)
	s, client := clientPair(t)
	h := &closeRec{ch: make(chan closeAt, 1)}
	c, err := Add(l, s, h, Config{WriteTimeout: limit, MaxWriteQueue: total})
	require.NoError(t, err)
	var began time.Time
	inCall(t, c, func(c *Conn) {
		_, err := c.Write(make([]byte, total))
		require.NoError(t, err)
		c.Close()
		began = time.Now()
	})
	got, longest, last := 0, time.Duration(0), began
	buf := make([]byte, burst)
	for got < total {
		n, err := io.ReadFull(client, buf[:min(burst, total-got)])
		now := time.Now()
		longest, last = max(longest, now.Sub(last)), now
		got += n
		if err != nil {
			end := closedWithin(t, h, "cut off")
			require.GreaterOrEqual(t, longest, limit, "cut off (%v, the client's read: %v) after %d of %d bytes, though it never paused for the WriteTimeout", end.err, err, got, total)
			t.Logf("the reader paused %v: rightly cut off", longest)
			return
		}
		time.Sleep(pause)
	}
	end := closedWithin(t, h, "everything written")
	require.NoError(t, end.err, "closed after %v, the reader's longest pause %v", end.at.Sub(began), longest)
	require.Greater(t, end.at.Sub(began), limit, "the transfer lasted longer than one WriteTimeout")
}
