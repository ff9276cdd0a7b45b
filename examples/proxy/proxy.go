//go:build unix

package main

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"sync"
	"sync/atomic"
	"time"

	"github.com/unipoll/unipoll/eventloop"
	"github.com/unipoll/unipoll/netloop"
	"github.com/unipoll/unipoll/socket"
)

// config is the proxy's, from the flags.
type config struct {
	listen         string
	backend        string // host:port, host an IP literal
	loops          int
	connectTimeout time.Duration
	idleTimeout    time.Duration // 0: never
	drainTimeout   time.Duration
	copy           bool        // -mode copy: the handlers copy (copy.go); else netloop.Relay
	tls            *tls.Config // -tls-cert, -tls-key: clients speak TLS (tls.go); implies copy
	conn           netloop.Config
}

// proxy is a Group of Loops accepting clients and relaying each to a
// connection of its own to the backend.
//
// A drain (Stop) is the Group's Shutdown: the listener closes at once, so
// new clients are refused, the pairs in flight finish on their own
// (pair.Draining, side.Draining), and at -drain-timeout the rest are
// closed.
type proxy struct {
	cfg    config
	g      *netloop.Group
	ln     *netloop.Listener
	dialer netloop.Dialer
	logf   func(format string, args ...any)

	pairs    atomic.Int64  // pairs accepted and not yet closed
	stop     chan struct{} // closed by Stop
	stopOnce sync.Once
}

// newProxy listens on cfg.listen. Nothing is accepted before Run.
func newProxy(cfg config, logf func(string, ...any)) (*proxy, error) {
	if err := checkBackend(cfg.backend); err != nil {
		return nil, err
	}
	if cfg.connectTimeout <= 0 || cfg.idleTimeout < 0 || cfg.drainTimeout < 0 {
		return nil, fmt.Errorf("proxy: -connect-timeout %v must be positive, -idle-timeout %v and -drain-timeout %v not negative",
			cfg.connectTimeout, cfg.idleTimeout, cfg.drainTimeout)
	}
	cfg.conn.IdleTimeout = cfg.idleTimeout
	cfg.copy = cfg.copy || cfg.tls != nil // a Relay would pass the ciphertext on
	g, err := netloop.NewGroup(netloop.GroupConfig{Loops: cfg.loops})
	if err != nil {
		return nil, err
	}
	px := &proxy{cfg: cfg, g: g, logf: logf, stop: make(chan struct{}),
		dialer: netloop.Dialer{Timeout: cfg.connectTimeout, Config: cfg.conn}}
	if px.ln, err = g.ListenTCP("tcp", cfg.listen, px.accept); err != nil {
		return nil, errors.Join(err, g.Close())
	}
	return px, nil
}

// checkBackend checks that addr is "host:port". A host name is resolved
// for each client, off the Loop (netloop.Dialer).
func checkBackend(addr string) error {
	host, port, err := net.SplitHostPort(addr)
	if err == nil && (host == "" || port == "") {
		err = errors.New("missing host or port")
	}
	if err != nil {
		return fmt.Errorf("proxy: -backend %s: want host:port: %w", addr, err)
	}
	return nil
}

// accept puts a new client on the Loop the Group chose, paused, and dials
// the backend for it from that Loop.
func (px *proxy) accept(l *eventloop.Loop, c *socket.TCPConn) {
	_ = c.SetNoDelay(true)
	p := newPair(px)
	px.pairs.Add(1)
	cc := px.cfg.conn
	cc.TLS = px.cfg.tls // the backend's Conn (px.dialer) stays plain
	client, err := netloop.Add(l, c, p.clientHandler(), cc)
	if err != nil {
		px.logf("proxy: %v", err)
		px.pairDone()
		return
	}
	p.client = client
	client.PauseRead() // before its first call: nothing is read until the backend answers
	if err := px.dialer.Dial(context.Background(), l, "tcp", px.cfg.backend, p.backendHandler(), p.dialed); err != nil {
		p.dialed(nil, err)
	}
}

// pairDone counts a pair out.
func (px *proxy) pairDone() { px.pairs.Add(-1) }

// Addr is the address the proxy listens on.
func (px *proxy) Addr() net.Addr { return px.ln.Addr() }

// Stop starts the drain; safe from any goroutine, any number of times.
func (px *proxy) Stop() {
	px.stopOnce.Do(func() { close(px.stop) })
}

// Run serves until Stop and the drain, then closes every connection, the
// listener and the Loops. A drain cut short by -drain-timeout is logged,
// not an error: the proxy did what it was told.
func (px *proxy) Run() error {
	done := make(chan struct{})
	shut := make(chan error, 1)
	go func() {
		select {
		case <-px.stop:
			ctx, cancel := context.WithTimeout(context.Background(), px.cfg.drainTimeout)
			defer cancel()
			err := px.g.Shutdown(ctx)
			if errors.Is(err, context.DeadlineExceeded) {
				px.logf("proxy: drain timed out after %v; the pairs left were reset", px.cfg.drainTimeout)
				err = nil
			}
			shut <- err
		case <-done:
			shut <- nil
		}
	}()
	err := px.g.Run(context.Background(), nil)
	close(done)
	serr := <-shut
	if errors.Is(err, context.Canceled) {
		err = nil
	}
	return errors.Join(err, serr, ignoreClosed(px.g.Close()))
}

// ignoreClosed drops ErrClosed: closing what is closed already is fine.
func ignoreClosed(err error) error {
	if errors.Is(err, eventloop.ErrClosed) {
		return nil
	}
	return err
}
