package main

import (
	"context"
	"errors"
	"net"
	"sync/atomic"
	"time"

	"golang.org/x/sys/unix"

	"github.com/unipoll/unipoll/eventloop"
	"github.com/unipoll/unipoll/netloop"
	"github.com/unipoll/unipoll/socket"
)

// server is a Group of Loops sharing one key space.
type server struct {
	cfg      config
	g        *netloop.Group
	db       *store
	addr     net.Addr
	maxReply int // the largest reply a session builds (below the write queue's bound)
	logf     func(format string, args ...any)
	mem      clientMemory
	clients  atomic.Int64 // connected now (INFO's connected_clients)

	// The most output any Conn held queued, and input it held unconsumed,
	// after a request: what bounds the server's memory per client.
	maxQueued, maxBuffered atomic.Int64
}

// noteMax raises m to v if v is larger.
func noteMax(m *atomic.Int64, v int64) {
	for {
		old := m.Load()
		if v <= old || m.CompareAndSwap(old, v) {
			return
		}
	}
}

func newServer(cfg config, logf func(string, ...any)) (*server, error) {
	cfg, err := cfg.withDefaults()
	if err != nil {
		return nil, err
	}
	g, err := netloop.NewGroup(netloop.GroupConfig{Loops: cfg.loops})
	if err != nil {
		return nil, err
	}
	s := &server{cfg: cfg, g: g, db: newStore(), logf: logf}
	s.mem.limit = int64(cfg.clientMem)
	cc, err := s.connConfig()
	if err != nil {
		return nil, errors.Join(err, g.Close())
	}
	s.maxReply = min(cfg.maxReply, cc.MaxWriteQueue-cc.HighWater-replySlack)
	var opts []netloop.ListenOption
	if cfg.reusePort {
		opts = append(opts, netloop.ReusePort())
	}
	ln, err := g.ListenTCP("tcp", cfg.addr, s.accept, opts...)
	if err != nil {
		return nil, errors.Join(err, g.Close())
	}
	s.addr = ln.Addr()
	if _, err := g.Loops()[0].AfterFunc(sweepEvery, s.sweep); err != nil {
		return nil, errors.Join(err, g.Close())
	}
	return s, nil
}

// Expired keys that nobody reads are dropped by a sweep on the first Loop,
// every sweepEvery, of up to sweepPerShard keys of each shard: redis'
// active expiry, on the Loop's timer rather than a goroutine of its own.
const (
	sweepEvery    = 100 * time.Millisecond
	sweepPerShard = 20
)

func (s *server) sweep(l *eventloop.Loop) {
	s.db.sweep(sweepPerShard)
	_, _ = l.AfterFunc(sweepEvery, s.sweep) // fails only once the Loop is closing
}

// accept starts a session on the Loop the Group chose.
func (s *server) accept(l *eventloop.Loop, c *socket.TCPConn) {
	_ = c.SetNoDelay(true)
	ss := &session{srv: s}
	conn, err := netloop.Add(l, c, ss, s.cfg.conn)
	if err != nil {
		s.logf("resp: add %s: %v", c.RemoteAddr(), err)
		return
	}
	ss.conn = conn
	s.clients.Add(1)
}

// Addr is the address the server listens on.
func (s *server) Addr() net.Addr { return s.addr }

// Stop drains the connections (netloop.Group.Shutdown) and makes Run
// return.
func (s *server) Stop() {
	ctx, cancel := context.WithTimeout(context.Background(), stopDrain)
	defer cancel()
	_ = s.g.Shutdown(ctx) // ErrClosed after Run: nothing left to stop
}

// stopDrain bounds Stop's drain: replies are written at once, so a Conn
// still open after it has a client that stopped reading.
const stopDrain = 5 * time.Second

// Run serves until Stop, then closes everything.
func (s *server) Run() error {
	err := s.g.Run(context.Background(), nil)
	if errors.Is(err, context.Canceled) {
		err = nil
	}
	if cerr := s.g.Close(); cerr != nil && !errors.Is(cerr, eventloop.ErrClosed) {
		err = errors.Join(err, cerr)
	}
	return err
}

// session is one client connection's protocol state.
type session struct {
	srv  *server
	conn *netloop.Conn
	args [][]byte // the current request's arguments, reused
	out  []byte   // the current request's reply, reused
	quit bool     // QUIT: close once the reply is written
	held int64    // unconsumed input counted in srv.mem (see clientMemory)
}

// errClientMem is the reply to a client refused by -max-client-memory.
const errClientMem = "ERR client memory limit reached (max-client-memory): closing the connection"

// Data parses and runs every complete request in in, and queues their
// replies on the Conn, which writes them all at the end of the read: a
// pipeline of N requests that arrives in one read costs one read and one
// write. It stops early, leaving the rest for later, when the queued
// replies pass the Conn's high-water mark: the Conn stops reading then,
// and hands the rest back when the client has read its replies.
func (s *session) Data(c *netloop.Conn, in []byte) int {
	lim := s.srv.cfg.lim
	high := s.srv.cfg.conn.HighWater
	done := 0
	for done < len(in) && !s.quit {
		if c.Queued() > high {
			break
		}
		args, n, err := parse(in[done:], s.args, lim)
		s.args = args
		if errors.Is(err, errIncomplete) {
			break
		}
		if err != nil {
			// Malformed: reply, close once written, take the rest.
			_, _ = c.Write(appendError(s.out[:0], err.Error()))
			c.Close()
			s.srv.mem.resize(&s.held, 0)
			return len(in)
		}
		done += n
		if len(args) == 0 {
			continue
		}
		s.out = s.execute(args, s.out[:0])
		if s.out == nil || len(s.out) > s.srv.maxReply {
			s.out = appendError(s.out[:0], "ERR reply exceeds the output buffer limit")
		}
		if _, err := c.Write(s.out); err != nil {
			c.Abort(err) // cannot happen below high water; do not leave a request unanswered
			s.srv.mem.resize(&s.held, 0)
			return len(in)
		}
		if q := int64(c.Queued()); q > s.srv.maxQueued.Load() {
			noteMax(&s.srv.maxQueued, q)
		}
		if cap(s.out) > 64<<10 {
			s.out = nil // a big reply's buffer goes back to the GC
		}
	}
	if s.quit {
		c.Close()
		s.srv.mem.resize(&s.held, 0)
		return len(in)
	}
	rest := int64(len(in) - done)
	if !s.srv.mem.resize(&s.held, rest) {
		// Refused: what it holds is dropped with its Conn's input, and
		// the replies queued before it still go out.
		s.srv.mem.refused.Add(1)
		s.srv.mem.resize(&s.held, 0)
		_, _ = c.Write(appendError(s.out[:0], errClientMem))
		c.Close()
		return len(in)
	}
	if rest > s.srv.maxBuffered.Load() {
		noteMax(&s.srv.maxBuffered, rest)
	}
	return done
}

// Closed releases what the session held and logs what a client does not
// cause by going away.
func (s *session) Closed(c *netloop.Conn, err error) {
	s.srv.mem.resize(&s.held, 0)
	s.srv.clients.Add(-1)
	if err != nil && !errors.Is(err, unix.ECONNRESET) && !errors.Is(err, unix.EPIPE) && !errors.Is(err, netloop.ErrIdleTimeout) {
		s.srv.logf("resp: %v", err)
	}
}
