package main

import (
	"errors"
	"fmt"
	"time"

	"github.com/unipoll/unipoll/netloop"
)

// config is the server's. A zero limit is its default.
type config struct {
	addr      string
	loops     int
	reusePort bool
	idle      time.Duration // close connections idle this long (0: never), through the Conn's IdleTimeout
	lim       limits        // a request's bounds; zero fields are defaultLimits'
	maxReply  int           // bytes in one reply (-max-reply)
	clientMem int           // bytes of unconsumed input all clients together may hold (-max-client-memory)
	conn      netloop.Config
}

// Defaults of the limits that are not a request's.
const (
	// defaultMaxReply lets a GET of the largest value the default
	// -max-bulk takes be answered, with room for its header.
	defaultMaxReply = 512<<20 + 64<<10
	// defaultClientMem: redis-server has no such bound by default
	// (maxmemory-clients 0); a server that serves anyone should.
	defaultClientMem = 256 << 20
	// replySlack is what the write queue's bound keeps above a reply
	// begun just below the high-water mark.
	replySlack = 1024
)

// errConfig is a negative limit, or limits that contradict each other.
var errConfig = errors.New("resp: invalid limits")

// withDefaults fills in the zero limits and checks them. A request
// larger than -max-client-memory could never be held whole, so
// -max-request is lowered to it: such a request is refused at its header.
func (cfg config) withDefaults() (config, error) {
	l, d := &cfg.lim, defaultLimits
	for _, f := range []struct {
		v   *int
		def int
	}{
		{&l.maxArgs, d.maxArgs}, {&l.maxBulk, d.maxBulk}, {&l.maxInline, d.maxInline}, {&l.maxTotal, d.maxTotal},
		{&cfg.maxReply, defaultMaxReply}, {&cfg.clientMem, defaultClientMem},
	} {
		if *f.v < 0 {
			return cfg, fmt.Errorf("%w: a negative limit (%+v)", errConfig, cfg)
		}
		if *f.v == 0 {
			*f.v = f.def
		}
	}
	l.maxTotal = min(l.maxTotal, cfg.clientMem)
	if cfg.conn.MaxReadBuffer == 0 {
		// Room for the largest request the parser accepts.
		cfg.conn.MaxReadBuffer = l.maxTotal + l.maxInline
	}
	cfg.conn.IdleTimeout = cfg.idle
	return cfg, nil
}

// connConfig is the netloop.Config with its defaults filled in, which the
// sessions rely on (HighWater, MaxWriteQueue). The write queue's bound is
// room for the largest reply above the high-water mark: a session stops
// running requests once its queue passes the mark, so the queue holds
// at most one reply more, and a queue this large is never allocated in
// advance.
func (s *server) connConfig() (netloop.Config, error) {
	c := s.cfg.conn
	if c.HighWater == 0 {
		c.HighWater = netloop.DefaultHighWater
		if c.MaxWriteQueue != 0 {
			c.HighWater = min(c.HighWater, c.MaxWriteQueue)
		}
	}
	if c.MaxWriteQueue == 0 {
		c.MaxWriteQueue = s.cfg.maxReply + c.HighWater + replySlack
	} else if c.MaxWriteQueue-c.HighWater < 64<<10 {
		// Set by hand (not a flag): leave room for ordinary replies.
		return c, fmt.Errorf("%w: MaxWriteQueue must exceed HighWater by 64 KiB at least", errConfig)
	}
	s.cfg.conn = c
	return c, nil
}
