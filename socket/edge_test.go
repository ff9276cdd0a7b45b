//go:build unix

package socket

import (
	"bytes"
	"errors"
	"io"
	"net"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/unipoll/unipoll/poll"
)

// The rule for callers under Edge (package doc, "Edge-triggered
// registration"): a read pass may end at a short read on a stream or at
// ErrWouldBlock; every other pass ends at ErrWouldBlock. These tests follow
// exactly that rule and require a new event for every new arrival after a
// pass ended. On epoll and kqueue the kernel keeps that promise; on a
// backend that emulates edge exactly (poll(2)), the condition reported
// leaves the poll set until the socket says a pass has ended (Drained), so
// a missing Drained shows here as a wait that times out.

// streamConn is what TCPConn and UnixConn have in common here.
type streamConn interface {
	poll.Evented
	io.ReadWriter
}

// streamPair is a connected pair of stream sockets of one kind: a is the
// end under test, b its peer.
type streamPair struct {
	name string
	a, b streamConn
}

// streamPairs returns a connected TCP pair and a Unix socket pair, none of
// them registered anywhere.
func streamPairs(t *testing.T) []streamPair {
	t.Helper()
	setup := newPoller(t)
	client, server := tcpPair(t, setup)
	require.NoError(t, setup.p.Deregister(client))
	require.NoError(t, setup.p.Deregister(server))
	a, b, err := Pair()
	require.NoError(t, err)
	closeIt(t, a)
	closeIt(t, b)
	return []streamPair{
		{name: "tcp", a: server, b: client},
		{name: "unix", a: a, b: b},
	}
}

// readPass reads from r as an Edge caller may: until ErrWouldBlock, or
// until a read comes back shorter than buf. It returns what it read and
// whether it stopped at a short read.
func readPass(t *testing.T, r io.Reader, buf []byte) (got []byte, short bool) {
	t.Helper()
	for {
		n, err := r.Read(buf)
		if errors.Is(err, ErrWouldBlock) {
			require.Zero(t, n)
			return got, false
		}
		require.NoError(t, err)
		got = append(got, buf[:n]...)
		if n < len(buf) {
			return got, true
		}
	}
}

// Messages shorter than, as long as, and longer than the read buffer: a
// pass ends at a short read (first and last), or at ErrWouldBlock after a
// full read (second); every message needs a new event, each new one is
// reported, and no byte is lost.
func TestEdgeReadPassEnds(t *testing.T) {
	for _, sp := range streamPairs(t) {
		t.Run(sp.name, func(t *testing.T) {
			w := newPoller(t)
			require.NoError(t, w.p.Register(sp.a, tokServer, poll.Readable, poll.Edge))
			buf := make([]byte, 1024)
			shortEnds, blockEnds := 0, 0
			for round, size := range []int{5, len(buf), 3*len(buf) + 7, 1, 5, len(buf)} {
				msg := bytes.Repeat([]byte{byte('a' + round)}, size)
				_, err := sp.b.Write(msg)
				require.NoError(t, err)
				var got []byte
				for len(got) < size {
					// One event, one pass. A message may arrive in pieces
					// (each a new edge); a spurious event is an empty pass.
					w.wait(tokServer, poll.Readable)
					part, short := readPass(t, sp.a, buf)
					got = append(got, part...)
					if short {
						shortEnds++
					} else {
						blockEnds++
					}
				}
				require.Equal(t, msg, got, "round %d", round)
			}
			require.Positive(t, shortEnds, "no pass ended at a short read")
			require.Positive(t, blockEnds, "no pass ended at ErrWouldBlock")
		})
	}
}

// A pass that fills the send buffer ends at ErrWouldBlock; once the peer
// drains it, a new Writable event comes, every round.
func TestEdgeWritePassEnds(t *testing.T) {
	for _, sp := range streamPairs(t) {
		t.Run(sp.name, func(t *testing.T) {
			w := newPoller(t)
			require.NoError(t, w.p.Register(sp.a, tokClient, poll.Writable, poll.Edge))
			// The peer drains through the same Poll, by its own rule.
			require.NoError(t, w.p.Register(sp.b, tokServer, poll.Readable, poll.Edge))
			w.wait(tokClient, poll.Writable) // writable from the start
			chunk := make([]byte, 64<<10)
			for round := range 3 {
				sent := 0
				for {
					n, err := sp.a.Write(chunk)
					sent += n
					if errors.Is(err, ErrWouldBlock) {
						break
					}
					require.NoError(t, err)
				}
				require.Positive(t, sent, "round %d", round)
				got := len(w.readN(tokServer, sp.b, sent))
				require.Equal(t, sent, got, "round %d", round)
				w.wait(tokClient, poll.Writable)
			}
		})
	}
}

// Connections are accepted until ErrWouldBlock; each new one after that is
// a new Readable event on the listener.
func TestEdgeAcceptPassEnds(t *testing.T) {
	w := newPoller(t)
	ln, err := ListenTCP("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	closeIt(t, ln)
	require.NoError(t, w.p.Register(ln, tokListener, poll.Readable, poll.Edge))
	for round, dials := range []int{1, 3, 1} {
		for range dials {
			c, err := DialTCP("tcp", ln.Addr().String())
			require.NoError(t, err)
			closeIt(t, c)
		}
		for accepted := 0; accepted < dials; {
			w.wait(tokListener, poll.Readable)
			for {
				s, err := ln.Accept()
				if errors.Is(err, ErrWouldBlock) {
					break
				}
				require.NoError(t, err, "round %d", round)
				require.NoError(t, s.Close())
				accepted++
			}
		}
	}
}

// Datagrams: every read is whole and usually shorter than the buffer, which
// says nothing about what else is queued, so a pass ends only at
// ErrWouldBlock, for ReadFrom and for Read on a connected socket alike.
func TestEdgeDatagramPassEnds(t *testing.T) {
	w := newPoller(t)
	srv, err := ListenUDP("udp", "127.0.0.1:0")
	require.NoError(t, err)
	closeIt(t, srv)
	cli, err := DialUDP("udp", srv.LocalAddr().String())
	require.NoError(t, err)
	closeIt(t, cli)
	require.NoError(t, w.p.Register(srv, tokServer, poll.Readable, poll.Edge))
	require.NoError(t, w.p.Register(cli, tokClient, poll.Readable, poll.Edge))

	buf := make([]byte, 2048)
	msgs := []string{"one", "two", "three"}
	for round := range 3 {
		for _, m := range msgs {
			_, err := cli.Write([]byte(m))
			require.NoError(t, err)
		}
		var got []string
		var from net.Addr
		for len(got) < len(msgs) {
			w.wait(tokServer, poll.Readable)
			for {
				n, addr, err := srv.ReadFrom(buf)
				if errors.Is(err, ErrWouldBlock) {
					break
				}
				require.NoError(t, err)
				got, from = append(got, string(buf[:n])), addr
			}
		}
		require.Equal(t, msgs, got, "round %d", round)

		for _, m := range msgs {
			_, err := srv.WriteTo([]byte("re:"+m), from)
			require.NoError(t, err)
		}
		got = got[:0]
		for len(got) < len(msgs) {
			w.wait(tokClient, poll.Readable)
			for {
				n, err := cli.Read(buf)
				if errors.Is(err, ErrWouldBlock) {
					break
				}
				require.NoError(t, err)
				got = append(got, string(buf[:n]))
			}
		}
		require.Equal(t, []string{"re:one", "re:two", "re:three"}, got, "round %d", round)
	}
}

// The paths that end a pass allocate nothing, registered Edge or not: a
// short read, a read that would block, a write that would block.
func TestEdgePassEndsAllocateNothing(t *testing.T) {
	for _, opts := range []poll.PollOpt{poll.Edge, poll.Level} {
		t.Run(opts.String(), func(t *testing.T) {
			w := newPoller(t)
			a, b, err := Pair()
			require.NoError(t, err)
			closeIt(t, a)
			closeIt(t, b)
			require.NoError(t, w.p.Register(a, 1, poll.Readable|poll.Writable, opts))
			// One Poll first: in completion mode (UNIPOLL_COMPLETION=1 on
			// uring) a Read that finds nothing looks at the ring only on
			// the thread that polls, which this makes the test's.
			_, err = w.p.Poll(w.ev, 0)
			require.NoError(t, err)
			msg, buf := []byte("x"), make([]byte, 64)
			allocs := testing.AllocsPerRun(100, func() {
				if _, err := b.Write(msg); err != nil {
					t.Fatal(err)
				}
				if n, err := a.Read(buf); n != 1 || err != nil {
					t.Fatalf("short read: %d, %v", n, err)
				}
				if _, err := a.Read(buf); err != ErrWouldBlock {
					t.Fatalf("drained read: %v", err)
				}
			})
			require.Zero(t, allocs)

			chunk := make([]byte, 64<<10)
			for {
				if _, err := a.Write(chunk); err == ErrWouldBlock {
					break
				} else if err != nil {
					require.NoError(t, err)
				}
			}
			allocs = testing.AllocsPerRun(100, func() {
				if _, err := a.Write(msg); err != ErrWouldBlock {
					t.Fatalf("full write: %v", err)
				}
			})
			require.Zero(t, allocs)
		})
	}
}
