//go:build linux

package sys

import (
	"bytes"
	"crypto/rand"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"
)

// A receive that finds no room in the SQ is armed by the next Select
// (S3): every other arm fails here, as it does when the kernel takes no
// more submissions until a harvest, and every byte still arrives. Before
// the unarmed list, the first re-arm that failed left the Stream without
// a receive for good, and the reader waited forever.

// failArms makes each receive armed from now on fail if fail says so of
// its number (1, 2, ...), and returns how many did.
func failArms(s *uringSelector, fail func(call int) bool) func() int {
	var calls, failed int // both under s.mu, where armRecvLocked asks
	s.mu.Lock()
	s.testArmFail = func() bool {
		calls++
		if fail(calls) {
			failed++
			return true
		}
		return false
	}
	s.mu.Unlock()
	return func() int {
		s.mu.Lock()
		defer s.mu.Unlock()
		return failed
	}
}

func everyOther(call int) bool { return call%2 == 1 }

// One Stream, 4 MiB: each receive ends at its cap (or at a pause) and is
// armed again, by the harvest or by Read. Three arms in four fail, so
// that a Select's last look before its wait finds the SQ full too.
func TestUringStreamArmRetried(t *testing.T) {
	s := openStreamsOrSkip(t)
	p := newSocketpair(t)
	st := addStream(t, s, p.a, 1, Readable, Edge)
	failed := failArms(s, func(call int) bool { return call%4 != 0 })
	msg, done := startWriter(p.b, 4<<20)
	got := readStreamDraining(t, s, p.a, st, len(msg))
	require.True(t, bytes.Equal(msg, got), "bytes differ")
	<-done
	require.Positive(t, failed(), "no arm failed: the test tests nothing")
}

// readStreamDraining reads want bytes from st as a Poll's caller does: to
// EAGAIN, then Drained, then Select.
func readStreamDraining(t *testing.T, s *uringSelector, fd int, st Stream, want int) []byte {
	t.Helper()
	var got []byte
	buf := make([]byte, 64<<10)
	limit := time.Now().Add(10 * time.Second)
	for len(got) < want && time.Now().Before(limit) {
		n, err := st.Read(buf)
		if err == unix.EAGAIN {
			require.NoError(t, s.Drained(fd, Readable))
			selectEvents(t, s, 16, 50*time.Millisecond)
			continue
		}
		require.NoError(t, err)
		require.NotZero(t, n, "EOF after %d of %d bytes", len(got), want)
		got = append(got, buf[:n]...)
	}
	require.Equal(t, want, len(got), "bytes read before the deadline")
	return got
}

// More streams than buffers: the receives that ENOBUFS ended are armed
// again as buffers come back, and those arms fail too.
func TestUringStreamStarvedArmRetried(t *testing.T) {
	s := openStreamsOrSkip(t)
	var failed func() int
	starveAndRead(t, s, func() { failed = failArms(s, everyOther) })
	selectEvents(t, s, 16, 0) // a re-arm that failed in a look's harvest is armed by a Select
	s.mu.Lock()
	dry, unarmed := s.ranDry, len(s.unarmed)
	s.mu.Unlock()
	require.Positive(t, dry, "the ring never ran dry: the test tests nothing")
	require.Positive(t, failed(), "no arm failed: the test tests nothing")
	require.Zero(t, unarmed, "streams left in the unarmed list")
	require.Zero(t, s.bufs.lent.Load())
}

// A Read on another goroutine whose arm fails after the Select's last
// flush, just before it waits: the Select is nudged, arms the receive and
// reports the bytes, rather than wait out its timeout with the Stream
// holding no receive (found by review: nothing in the SQ would end the
// wait).
func TestUringStreamUnarmedNudgesWait(t *testing.T) {
	s := openStreamsOrSkip(t)
	p := newSocketpair(t)
	st := addStream(t, s, p.a, 1, Readable, Edge)
	msg, done := startWriter(p.b, 256<<10) // more than the Stream holds: the rest waits in the socket
	selectUntilPaused(t, s, st.(*uringStream))
	failed := failArms(s, func(call int) bool { return call == 1 })
	var got []byte
	hooked := make(chan struct{})
	s.testBeforeWait = func() {
		select {
		case <-hooked:
			return
		default:
			close(hooked)
		}
		// Another goroutine's reader, in the gap: it reads the Stream
		// empty (its resume's arm fails), to EAGAIN, and says Drained.
		read := make(chan []byte, 1)
		go func() { read <- readToEAGAIN(t, st) }()
		got = <-read
		require.NoError(t, s.Drained(p.a, Readable))
	}
	// Without the nudge the Select arms the receive only after its wait.
	evs := selectSoon(t, s, "the Select waited out its timeout with the Stream unarmed")
	require.Equal(t, 1, failed(), "the reader's arm did not fail: the test tests nothing")
	require.NotEmpty(t, evs)
	got = append(got, readStreamDraining(t, s, p.a, st, len(msg)-len(got))...)
	require.True(t, bytes.Equal(msg, got), "bytes differ")
	<-done
}

// A paused Stream whose receive ends for want of buffers (ENOBUFS, where a
// cancelled one ends with ECANCELED) after Read emptied it: it is starved,
// and goes on once buffers come back, not left paused with nothing held,
// where no Read would come to resume it (found by review). The kernel
// cannot be made to post that ending on cue, so the test makes the state
// itself: a real pause, a receive marked in flight while Read empties the
// Stream (its resume then leaves the pause alone, as with a cancel on its
// way), and that receive's last completion handed to the selector.
func TestUringStreamPausedRunsDry(t *testing.T) {
	s := openStreamsOrSkip(t)
	p := newSocketpair(t)
	st := addStream(t, s, p.a, 1, Readable, Edge)
	us := st.(*uringStream)
	msg, done := startWriter(p.b, 256<<10)
	selectUntilPaused(t, s, us)
	s.mu.Lock()
	us.rx = true // the receive whose cancel is on its way
	s.mu.Unlock()
	got := readToEAGAIN(t, st)
	s.mu.Lock()
	s.streamCompleteLocked(uringCQE{userData: us.userData(false), res: -int32(unix.ENOBUFS)})
	paused, starved, rx := us.paused, us.starved, us.rx
	s.mu.Unlock()
	require.False(t, paused, "left paused with nothing held")
	require.True(t, starved || rx, "no receive, and none to come")
	got = append(got, readStreamDraining(t, s, p.a, st, len(msg)-len(got))...)
	require.True(t, bytes.Equal(msg, got), "bytes differ")
	<-done
}

// selectUntilPaused selects until st's receive has ended at its bound (the
// writer keeps the socket full behind it).
func selectUntilPaused(t *testing.T, s *uringSelector, st *uringStream) {
	t.Helper()
	limit := time.Now().Add(10 * time.Second)
	for {
		require.True(t, time.Now().Before(limit), "the Stream never paused")
		selectEvents(t, s, 16, 10*time.Millisecond)
		s.mu.Lock()
		paused := st.paused && !st.rx
		s.mu.Unlock()
		if paused {
			return
		}
	}
}

// The arms fail at Read's resume, at its look, and at both of the next
// Select's flushes: the Select submits and tries once more before it
// waits, rather than wait out its timeout with the Stream unarmed (no
// Select ran when the resume failed, so none was nudged).
func TestUringStreamSelectArmsBeforeWait(t *testing.T) {
	s := openStreamsOrSkip(t)
	p := newSocketpair(t)
	st := addStream(t, s, p.a, 1, Readable, Edge)
	msg, done := startWriter(p.b, 256<<10)
	selectUntilPaused(t, s, st.(*uringStream))
	failed := failArms(s, func(call int) bool { return call <= 4 })
	got := readToEAGAIN(t, st)
	require.NoError(t, s.Drained(p.a, Readable))
	evs := selectSoon(t, s, "the Select waited out its timeout with the Stream unarmed")
	require.Equal(t, 4, failed(), "the arms did not fail where the test means them to")
	require.NotEmpty(t, evs)
	got = append(got, readStreamDraining(t, s, p.a, st, len(msg)-len(got))...)
	require.True(t, bytes.Equal(msg, got), "bytes differ")
	<-done
}

// startWriter writes size random bytes into fd from a goroutine of its
// own; done closes when all are written.
func startWriter(fd, size int) (msg []byte, done chan struct{}) {
	msg = make([]byte, size)
	_, _ = rand.Read(msg)
	done = make(chan struct{})
	go func() {
		defer close(done)
		writeAllBlocking(fd, msg)
	}()
	return msg, done
}

// readToEAGAIN reads st until it says EAGAIN and returns what it read.
// (It may run on another goroutine: it reports a failure with assert,
// which does not stop the goroutine, and the caller's checks then fail.)
func readToEAGAIN(t *testing.T, st Stream) []byte {
	buf := make([]byte, 64<<10)
	var got []byte
	for {
		n, err := st.Read(buf)
		got = append(got, buf[:n]...)
		if err == unix.EAGAIN || !assert.NoError(t, err) {
			return got
		}
	}
}
