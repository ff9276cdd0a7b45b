package main

import (
	"bytes"
	"math/rand/v2"
	"runtime"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// Many goroutines, each a session of its own, growing and shrinking
// their holdings at random against one budget: the total never passes
// the limit, a refusal changes nothing, and the total is 0 once every
// holding is released. Each keeps its last holding until all are done,
// so that the limit is met even if they happen to run one after another.
func TestClientMemoryResize(t *testing.T) {
	const limit, workers, steps = 1 << 20, 8, 20000
	m := &clientMemory{limit: limit}
	var refusals atomic.Int64
	var wg, stepped sync.WaitGroup
	release := make(chan struct{})
	for w := range workers {
		wg.Add(1)
		stepped.Add(1)
		go func() {
			defer wg.Done()
			r := rand.New(rand.NewPCG(uint64(w), 1))
			var mine int64
			for range steps {
				n := r.Int64N(limit)
				before := mine
				if !m.resize(&mine, n) {
					refusals.Add(1)
					if mine != before {
						t.Errorf("a refused resize changed the holding from %d to %d", before, mine)
					}
				}
				if h := m.held.Load(); h > limit {
					t.Errorf("held %d, past the limit %d", h, limit)
				}
			}
			stepped.Done()
			<-release
			m.resize(&mine, 0)
		}()
	}
	stepped.Wait()
	close(release)
	wg.Wait()
	require.Zero(t, m.held.Load(), "released")
	require.LessOrEqual(t, m.peak.Load(), int64(limit))
	require.Positive(t, refusals.Load(), "the limit was never reached: the test tested nothing")
}

// The acceptance: 500 clients each send the header of an 8 MiB value and
// 1 MiB of it, against -max-client-memory 64mb. As many as fit are held,
// and the total held never passes the bound; every other client gets the
// error reply and is disconnected; the server serves an ordinary client
// meanwhile; and what was held is released when the clients go.
func TestClientMemoryCap(t *testing.T) {
	const clients, limit = 500, 64 << 20
	var base runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&base)

	srv := start(t, config{loops: 2, clientMem: limit})
	addr := srv.Addr().String()
	header := []byte("*3\r\n$3\r\nSET\r\n$3\r\nbig\r\n$" + strconv.Itoa(8<<20) + "\r\n")
	body := bytes.Repeat([]byte("v"), 1<<20) // shared by every client: the test's own memory stays small
	per := int64(len(header) + len(body))

	// Each client sends its part, then waits for a reply: a refused one
	// gets the error, a held one nothing until the test closes it.
	type result struct {
		reply any
		err   error
	}
	results := make([]result, clients)
	var finished atomic.Int64
	conns := make([]*client, clients)
	var wg sync.WaitGroup
	for i := range conns {
		conns[i] = dial(t, addr)
		// A held client waits until the test closes it, past dial's
		// deadline if the machine is slow.
		require.NoError(t, conns[i].c.SetDeadline(time.Now().Add(5*time.Minute)))
		wg.Add(1)
		go func(c *client, r *result) {
			defer wg.Done()
			// A refused client's writes may fail: the server closes with
			// its input unread. The reply was sent before, and is read.
			if _, err := c.c.Write(header); err == nil {
				_, _ = c.c.Write(body)
			}
			r.reply, r.err = c.read()
			if r.err == nil {
				_, r.err = c.read() // the close after the reply
			}
			finished.Add(1)
		}(conns[i], &results[i])
	}

	// Settled: every client has been refused or is held whole. A client
	// held in part, or refused and not yet told, keeps this false (a held
	// client holds at most per bytes).
	settled := func() bool {
		f := finished.Load()
		return srv.mem.held.Load() == (clients-f)*per
	}
	require.Eventually(t, settled, 60*time.Second, 10*time.Millisecond,
		"held %d bytes, %d clients finished", srv.mem.held.Load(), finished.Load())
	held, refused := srv.mem.held.Load(), finished.Load()
	require.LessOrEqual(t, srv.mem.peak.Load(), int64(limit), "the bound was never passed")
	// The last refusal left less room than one client's part, and nothing
	// was released after it: the bound is filled as far as whole parts go.
	require.Equal(t, int64(limit)/per, clients-refused, "clients held")
	require.Equal(t, refused, srv.mem.refused.Load(), "refusals counted")

	// The server serves an ordinary client meanwhile, and INFO says what
	// it holds.
	c := dial(t, addr)
	require.Equal(t, "OK", c.mustDo(t, "SET", "k", "small"))
	require.Equal(t, []byte("small"), c.mustDo(t, "GET", "k"))
	info := string(c.mustDo(t, "INFO", "memory").([]byte))
	require.Contains(t, info, "\r\nmem_clients_normal:"+strconv.FormatInt(held, 10)+"\r\n")
	require.Contains(t, info, "\r\nmaxmemory_clients:"+strconv.Itoa(limit)+"\r\n")
	require.Contains(t, info, "\r\nevicted_clients:"+strconv.FormatInt(refused, 10)+"\r\n")

	// The process's memory: the clients' parts in Conn buffers that grow
	// by doubling (so up to twice what they hold), not 500 MiB.
	var now runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&now)
	grown := int64(now.HeapInuse) - int64(base.HeapInuse)
	t.Logf("%d clients held (%d MiB), %d refused; heap grew by %d MiB", clients-refused, held>>20, refused, grown>>20)
	require.Less(t, grown, int64(2*limit+32<<20), "heap growth")

	for i := range conns {
		_ = conns[i].c.Close()
	}
	wg.Wait()
	n := 0
	for _, r := range results {
		if r.reply == nil {
			continue // held, then closed by the test
		}
		n++
		require.Equal(t, respError(errClientMem), r.reply)
		require.Error(t, r.err, "the connection closes after the refusal")
	}
	require.Equal(t, int(refused), n, "refused clients that got the error reply")
	require.Eventually(t, func() bool { return srv.mem.held.Load() == 0 && srv.clients.Load() == 1 },
		30*time.Second, 10*time.Millisecond, "held %d bytes after the clients left", srv.mem.held.Load())
}
