package netloop

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/unipoll/unipoll/eventloop"
)

// A Conn made with no timeouts gets one from another goroutine while
// its Loop runs (two workers: the setter's goroutine is neither), and it
// takes effect: the Conn closes with that timeout's error, no earlier
// than the limit after the call. The write timeout's Conn has output its
// peer does not read.
func TestSetTimeoutFromAnotherGoroutine(t *testing.T) {
	for _, tc := range []struct {
		name string
		set  func(*Conn, time.Duration) error
		want error
	}{
		{"read", (*Conn).SetReadTimeout, ErrReadTimeout},
		{"idle", (*Conn).SetIdleTimeout, ErrIdleTimeout},
		{"write", (*Conn).SetWriteTimeout, ErrWriteTimeout},
	} {
		t.Run(tc.name, func(t *testing.T) {
			l := newLoop(t, eventloop.Config{Workers: 2})
			start(t, l, nil)
			s, _ := clientPair(t)
			h := &closeRec{ch: make(chan closeAt, 1)}
			c, err := Add(l, s, h, Config{MaxWriteQueue: 16 << 20})
			require.NoError(t, err)
			if tc.want == ErrWriteTimeout {
				inCall(t, c, func(c *Conn) {
					_, err := c.Write(make([]byte, 8<<20))
					require.NoError(t, err)
				})
			}
			openFor(t, h, 2*ruleLimit, "no timeout yet")
			set := time.Now()
			require.NoError(t, tc.set(c, ruleLimit))
			got := closedWithin(t, h, "after the set")
			require.ErrorIs(t, got.err, tc.want)
			require.GreaterOrEqual(t, got.at.Sub(set), ruleLimit)
			require.ErrorIs(t, tc.set(c, time.Second), ErrClosed, "a closed Conn")
		})
	}
}

// A long limit shortened from another goroutine takes effect at once
// (not at the old limit's expiry); a limit removed from another goroutine
// lets the Conn outlive it.
func TestSetTimeoutShortenAndRemove(t *testing.T) {
	l := newLoop(t, eventloop.Config{Workers: 2})
	start(t, l, nil)

	s, _ := clientPair(t)
	h := &closeRec{ch: make(chan closeAt, 1)}
	c, err := Add(l, s, h, Config{ReadTimeout: time.Hour})
	require.NoError(t, err)
	require.NoError(t, c.SetReadTimeout(ruleLimit))
	got := closedWithin(t, h, "shortened from an hour")
	require.ErrorIs(t, got.err, ErrReadTimeout)

	const limit = 3 * ruleLimit
	s, _ = clientPair(t)
	h = &closeRec{ch: make(chan closeAt, 1)}
	added := time.Now()
	c, err = Add(l, s, h, Config{ReadTimeout: limit})
	require.NoError(t, err)
	require.NoError(t, c.SetReadTimeout(0))
	// The change is applied at the latest at the end of the call that runs
	// this function, which follows it.
	var applied time.Time
	inCall(t, c, func(*Conn) { applied = time.Now() })
	select {
	case got := <-h.ch:
		// Only a Loop that took longer than the limit to apply the change
		// may have closed the Conn.
		require.GreaterOrEqual(t, applied.Sub(added), limit, "closed (%v) though the limit was removed", got.err)
		t.Logf("the change took %v, past the limit", applied.Sub(added))
	case <-time.After(3 * limit):
	}
}

// Bad input to the setters is an error, not a panic.
func TestSetTimeoutBadInput(t *testing.T) {
	l := newLoop(t, eventloop.Config{})
	s, _ := clientPair(t)
	c, err := Add(l, s, newEcho(), Config{})
	require.NoError(t, err)
	for _, set := range []func(*Conn, time.Duration) error{(*Conn).SetReadTimeout, (*Conn).SetIdleTimeout, (*Conn).SetWriteTimeout} {
		require.ErrorIs(t, set(c, -time.Second), ErrInvalidArgument)
		require.ErrorIs(t, set(nil, time.Second), ErrInvalidArgument)
		require.ErrorIs(t, set(&Conn{}, time.Second), ErrInvalidArgument)
	}
	s2, _ := clientPair(t)
	_, err = Add(l, s2, newEcho(), Config{WriteTimeout: -1})
	require.ErrorIs(t, err, ErrInvalidArgument)
}

// Conns added with equal Configs share one copy of it (a Conn's memory
// counts, per idle connection), and a timeout set on one of them changes
// that Conn's alone: the other keeps the Config it was given.
func TestSetTimeoutLeavesSharedConfig(t *testing.T) {
	l := newLoop(t, eventloop.Config{})
	start(t, l, nil)
	cfg := Config{IdleTimeout: time.Hour}
	s1, _ := clientPair(t)
	c1, err := Add(l, s1, &closeRec{ch: make(chan closeAt, 1)}, cfg)
	require.NoError(t, err)
	s2, _ := clientPair(t)
	h2 := &closeRec{ch: make(chan closeAt, 1)}
	c2, err := Add(l, s2, h2, cfg)
	require.NoError(t, err)
	// The Conns' Configs, read in their calls.
	cfgOf := func(c *Conn) *Config {
		var p *Config
		inCall(t, c, func(c *Conn) { p = c.cfg })
		return p
	}
	require.Same(t, cfgOf(c1), cfgOf(c2), "equal Configs not shared")

	require.NoError(t, c1.SetIdleTimeout(2*time.Hour))
	eventually(t, "the new limit to take effect", func() bool { return cfgOf(c1).IdleTimeout == 2*time.Hour })
	require.Equal(t, time.Hour, cfgOf(c2).IdleTimeout, "a shared Config changed")
	require.NoError(t, c2.SetIdleTimeout(ruleLimit))
	got := closedWithin(t, h2, "after the set")
	require.ErrorIs(t, got.err, ErrIdleTimeout)
	require.Equal(t, 2*time.Hour, cfgOf(c1).IdleTimeout)
}
