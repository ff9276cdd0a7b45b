package poll

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"
)

// Two sources under one Token: accepted, and both reported under it. A
// unipoll_debug build counts every Register or Reregister that gives a
// source a Token another registered source holds, and only those (not a
// source re-registered under its own Token, not a Token freed by
// Deregister or Close); a normal build counts nothing.
func TestSharedTokens(t *testing.T) {
	forEachBackend(t, func(t *testing.T, newPoll newPollFunc) {
		p := newPoll(t)
		a, peer := socketPair(t)
		c, _ := socketPair(t)
		r1, s1 := NewRegistration()
		defer r1.Close()
		r2, _ := NewRegistration()
		q := NewTimerQueue(0)
		defer q.Close()
		counted := func(want uint64, after string) {
			t.Helper()
			if !debugChecks {
				want = 0
			}
			require.Equal(t, want, p.Stats().SharedTokens, "after %s", after)
		}

		require.NoError(t, p.Register(Fd(a), 7, Readable, Edge))
		counted(0, "the first source under 7")
		require.NoError(t, p.Register(r1, 7, Readable, Edge))
		counted(1, "a second source under 7")

		// Both are reported, each under 7.
		_, err := unix.Write(peer, []byte("x"))
		require.NoError(t, err)
		require.NoError(t, s1.SetReadiness(Readable))
		ev := NewEvents(8)
		seen := 0
		for deadline := time.Now().Add(eventWait); seen < 2; {
			require.True(t, time.Now().Before(deadline), "only %d of the two events under token 7", seen)
			// Poll itself: pollEvents would refuse a token twice in one call.
			_, err := p.Poll(ev, 50*time.Millisecond)
			require.NoError(t, err)
			for e := range ev.All() {
				require.Equal(t, Token(7), e.Token)
				seen++
			}
		}

		require.NoError(t, p.Reregister(r1, 8, Readable, Edge))
		counted(1, "moving the second source to 8")
		require.NoError(t, p.Reregister(Fd(a), 7, Readable, Level))
		counted(1, "re-registering the only source under 7")
		require.NoError(t, p.Reregister(r1, 7, Readable, Edge))
		counted(2, "moving it back to 7")

		require.NoError(t, p.Deregister(Fd(a)))
		require.NoError(t, p.Deregister(r1))
		require.NoError(t, p.Register(r2, 7, Readable, Edge))
		counted(2, "a source under 7 once the others were deregistered")

		require.NoError(t, p.Register(Fd(c), 9, Readable, Edge))
		require.NoError(t, p.Register(q, 9, Readable, Edge))
		counted(3, "a TimerQueue under a descriptor's token")

		require.NoError(t, r2.Close())
		require.NoError(t, p.Register(r1, 7, Readable, Edge))
		counted(3, "a source under 7 once its holder was closed")
	})
}

// The cost of Register and Deregister, which a unipoll_debug build adds
// its token table to: a Registration (no system call, so the table's share
// shows) and a descriptor.
func BenchmarkRegisterDeregister(b *testing.B) {
	p, err := New()
	require.NoError(b, err)
	defer p.Close()
	reg, _ := NewRegistration()
	defer reg.Close()
	a, _ := socketPair(b)
	for _, src := range []struct {
		name string
		e    Evented
	}{{"registration", reg}, {"fd", Fd(a)}} {
		b.Run(src.name, func(b *testing.B) {
			for i := range b.N {
				if err := p.Register(src.e, Token(i), Readable, Edge); err != nil {
					b.Fatal(err)
				}
				if err := p.Deregister(src.e); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
