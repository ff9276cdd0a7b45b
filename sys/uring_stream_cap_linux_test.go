//go:build linux

package sys

import (
	"bytes"
	"crypto/rand"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// A receive is capped at what its Stream may still hold (S7).

// selectUntilStalled selects, without reading, until written has not
// moved for 20 Selects in a row (the writer is stalled: the socket is
// full and the Stream takes no more), or for at most 10 seconds.
func selectUntilStalled(t *testing.T, s *uringSelector, written *atomic.Int64) {
	t.Helper()
	limit := time.Now().Add(10 * time.Second)
	last, still := int64(-1), 0
	for still < 20 && time.Now().Before(limit) {
		selectEvents(t, s, 16, 5*time.Millisecond)
		if w := written.Load(); w != last {
			last, still = w, 0
		} else {
			still++
		}
	}
}

// A writer on another CPU that keeps the socket full, and a reader that
// does not read: the Stream holds no more than its bound and one buffer.
// Without the cap, the kernel kept the receive going for megabytes before
// the pause's cancel reached it.
func TestUringStreamCapBoundsFastWriter(t *testing.T) {
	s := openStreamsOrSkip(t)
	p := newSocketpair(t)
	st := addStream(t, s, p.a, 1, Readable, Edge)
	msg := make([]byte, 16<<20)
	_, _ = rand.Read(msg)
	var written atomic.Int64
	done := make(chan struct{})
	go func() {
		defer close(done)
		writeCounting(p.b, msg, &written)
	}()
	selectUntilStalled(t, s, &written)
	unread, _ := st.Buffered()
	s.mu.Lock()
	capped := s.recvCap == uringCapWorks
	s.mu.Unlock()
	got := readStreamAll(t, s, st, len(msg))
	require.True(t, bytes.Equal(msg, got), "bytes differ")
	<-done
	if !capped {
		t.Skip("this kernel has no multishot byte cap (Linux 6.17): the bound rests on the pause's cancel")
	}
	require.Less(t, unread, uringStreamHold+uringBufSize,
		"the Stream received past its bound (%d written)", written.Load())
}

// A kernel that refuses the cap (as those before 6.17 do, with EINVAL):
// the refused receives bring no error to their Streams, also those armed
// before the first refusal was harvested, the selector arms without the
// cap from then on, and every byte arrives.
func TestUringStreamCapRefused(t *testing.T) {
	s := openStreamsOrSkip(t)
	s.testRefuseCap = true
	const n = 3
	streams := make([]Stream, n)
	pairs := make([]*fdPair, n)
	for i := range n {
		pairs[i] = newSocketpair(t)
		streams[i] = addStream(t, s, pairs[i].a, uint64(i+1), Readable, Edge)
	}
	msg := make([]byte, 256<<10)
	_, _ = rand.Read(msg)
	done := make(chan struct{}, n)
	for i := range n {
		go func() {
			defer func() { done <- struct{}{} }()
			writeAllBlocking(pairs[i].b, msg)
		}()
	}
	for i := range n {
		got := readStreamAll(t, s, streams[i], len(msg))
		require.True(t, bytes.Equal(msg, got), "stream %d: bytes differ", i)
	}
	for range n {
		<-done
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	require.Equal(t, uringCapMissing, s.recvCap)
	for i := range n {
		require.False(t, streams[i].(*uringStream).capped, "stream %d: armed with the cap after the kernel refused it", i)
	}
}
