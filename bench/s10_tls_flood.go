//go:build linux

package main

// Scenario 10, a flood of half-open TLS handshakes: each TLS echo server,
// unpinned, gets N TCP connections from this process that never finish
// a handshake, of two kinds, each measured on its own:
//
//   - silent: connected, then nothing sent;
//   - partial: a valid record header announcing a 512-byte ClientHello,
//     then its first 100 bytes, then nothing.
//
// With the flood open, as the idle measurement does (s10_tls_idle.go):
// the server's goroutines, the growth of its resident set and of its live
// heap per connection. Then a real crypto/tls client dials, handshakes
// and echoes 16 bytes, and the time it took is a figure: a server whose
// handshake slots the flood holds makes it wait (tls-unipoll's
// HandshakeTimeout is set longer than the measurement, so that the flood
// is not closed under it). Then the flood closes, and the server must
// serve a client again.

import (
	"bytes"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// floodKind is one kind of half-open connection.
type floodKind struct {
	name  string // in the rows
	hello []byte // sent after connecting, then nothing more; nil: nothing
}

// floodHandshakeTimeout is tls-unipoll's HandshakeTimeout in the flood:
// longer than a pass, so that what is measured is the flood, not its
// closing.
const floodHandshakeTimeout = 10 * time.Minute

var floodKinds = []floodKind{
	{name: "silent (nothing sent)"},
	{name: "partial ClientHello (100 of 512 bytes)", hello: partialClientHello()},
}

// partialClientHello is the first 100 bytes of a TLS record carrying a
// 512-byte ClientHello: the record header (handshake, TLS 1.0 record
// version as clients send it, length 512), the handshake header
// (ClientHello, 508 bytes), the client version (TLS 1.2), a random, a
// 32-byte session id and the start of the cipher suite list; the other
// 417 bytes never come.
func partialClientHello() []byte {
	b := []byte{0x16, 0x03, 0x01, 0x02, 0x00, 0x01, 0x00, 0x01, 0xfc, 0x03, 0x03}
	for i := range 32 {
		b = append(b, byte(i*37+11)) // random
	}
	b = append(b, 32)
	for i := range 32 {
		b = append(b, byte(i*53+7)) // session id
	}
	b = append(b, 0x00, 0x20) // 16 cipher suites follow
	for len(b) < 100 {
		b = append(b, 0x13, 0x01)
	}
	return b[:100]
}

// tlsFloodResult is one pass of one server with one kind of flood.
type tlsFloodResult struct {
	tlsIdleResult                 // per half-open connection; the goroutines with the flood open
	probe           time.Duration // a real client's dial, handshake and 16 B echo; the bound if it did not finish
	probeErr        error         // why it did not, if it did not
	unread          int           // flood connections whose bytes the server had not read when measured
	goroutinesAfter int           // once the flood closed and the server saw it
}

func (r *Runner) tlsFlood(sec *Section, files tlsFiles) error {
	sec.Notes = append(sec.Notes, "flood: load average "+loadAvg()+" at the start")
	n := 10_000
	if r.o.quick {
		n = 100
	}
	bound := r.dur(10*time.Second, 3*time.Second)
	passes := r.passes(3)
	// No half-open connection takes a place among the handshakes (they
	// wait for their whole ClientHello), so the server has the goroutines
	// of an idle one, the idle measurement's bound.
	const gorBound = 16
	for _, kind := range floodKinds {
		rss, heap, gor, probe := map[string]*Sample{}, map[string]*Sample{}, map[string]*Sample{}, map[string]*Sample{}
		for pass := range passes {
			for _, name := range tlsNames {
				res, err := r.tlsFloodOnce(files, name, kind, n, bound)
				if err != nil {
					if name == tlsUnipoll {
						return fmt.Errorf("%s, flood of %d %s: %w", name, n, kind.name, err)
					}
					sec.Notes = append(sec.Notes, fmt.Sprintf("flood %s: %s failed: %v", kind.name, name, err))
					r.logf("  flood of %d %s, %s failed: %v", n, kind.name, name, err)
					continue
				}
				for _, f := range []struct {
					m map[string]*Sample
					v float64
				}{{rss, res.rssKiB}, {heap, res.heapKiB}, {gor, float64(res.goroutines)}, {probe, float64(res.probe.Nanoseconds())}} {
					if f.m[name] == nil {
						f.m[name] = &Sample{}
					}
					f.m[name].add(f.v)
				}
				probeText := formatValue(float64(res.probe.Nanoseconds()), "ns")
				if res.probeErr != nil {
					probeText = fmt.Sprintf("not done in %v (%v)", bound, res.probeErr)
					sec.Notes = append(sec.Notes, fmt.Sprintf("flood %s, pass %d: %s: the real client did not finish in %v: %v", kind.name, pass+1, name, bound, res.probeErr))
				}
				if res.unread > 0 {
					sec.Notes = append(sec.Notes, fmt.Sprintf("flood %s, pass %d: %s had left the bytes of %d connections unread when measured", kind.name, pass+1, name, res.unread))
				}
				r.logf("  flood of %d %s pass %d/%d %-11s RSS %.2f KiB/conn  heap %.2f KiB/conn  %d goroutines (%d after)  real client %s  unread %d  (load %s)",
					n, kind.name, pass+1, passes, name, res.rssKiB, res.heapKiB, res.goroutines, res.goroutinesAfter, probeText, res.unread, loadAvg())
			}
		}
		row := func(what, unit string, m map[string]*Sample, t Target) Row {
			get := func(k string) Sample {
				if m[k] == nil {
					return Sample{}
				}
				return *m[k]
			}
			return Row{What: fmt.Sprintf("TLS flood, %d half-open connections, %s: %s", n, kind.name, what), Unit: unit,
				Unipoll: get(tlsUnipoll), RatioTo: tlsGoNet, Target: t,
				Baselines: []Named{{tlsGoNet, get(tlsGoNet)}, {tlsNbio, get(tlsNbio)}}}
		}
		sec.Rows = append(sec.Rows,
			row("server goroutines", "", gor, Target{Abs: true, Max: float64(gorBound),
				Text: fmt.Sprintf("a small constant (≤ %d): no place among the handshakes", gorBound)}),
			row("memory per connection (VmRSS growth)", "KiB", rss, Target{}),
			row("live heap per connection (after GC)", "KiB", heap, Target{}),
			row("a real client's dial, handshake and 16 B echo meanwhile", "ns", probe, Target{Abs: true, Max: 1e9, Text: fmt.Sprintf("≤ 1 s (%v: not done)", bound)}))
	}
	sec.Notes = append(sec.Notes, fmt.Sprintf("flood: %d TCP connections from the runner that never finish a handshake (silent: nothing sent; partial: a record header announcing a 512-byte ClientHello and its first 100 bytes), to a fresh unpinned server per pass (tls-unipoll with HandshakeTimeout %v, longer than a pass; Go net's and nbio's servers have none), %d passes alternating; measured once the server holds every connection and has read what they sent (or 10 s passed): VmRSS after minus before, over %d, the live heap and goroutines as at idle; then a crypto/tls client (TLS 1.3) dials, handshakes and echoes 16 bytes, given up at %v (a figure of %v: not done); then the flood closes and a second client must be served within %v", n, floodHandshakeTimeout, passes, n, bound, bound, bound))
	return nil
}

// tlsFloodOnce starts server name, floods it with n half-open connections
// of kind, and reads what they cost and how long a real client waits
// meanwhile (at most bound).
func (r *Runner) tlsFloodOnce(files tlsFiles, name string, kind floodKind, n int, bound time.Duration) (tlsFloodResult, error) {
	var res tlsFloodResult
	statsFile := filepath.Join(r.buildDir, fmt.Sprintf("tls-flood-stats-%s.json", name))
	os.Remove(statsFile)
	addr, pid, stop, err := startListeningPID(r.tlsStart(files, name, statsFile, "-tls-handshake-timeout", floodHandshakeTimeout.String()), -1)
	if err != nil {
		return res, err
	}
	defer stop()
	port, _ := strconv.Atoi(addr[strings.LastIndexByte(addr, ':')+1:])
	base, err := serverBaseOf(pid, statsFile)
	if err != nil {
		return res, err
	}
	// waitListening's connection, closed by its client, may still hold a
	// descriptor of the server: the count to add the flood to is taken
	// once the server has closed it (no socket of the port in CLOSE_WAIT).
	if err := waitUntil(30*time.Second, func() (bool, error) {
		s, err := socketsOn(port)
		return s.closeWait == 0, err
	}); err != nil {
		return res, fmt.Errorf("the server kept a closed connection: %w", err)
	}
	fd0, err := procFDs(pid)
	if err != nil {
		return res, err
	}
	conns, err := dialAllWith(addr, n, func(c net.Conn) (net.Conn, error) {
		if kind.hello == nil {
			return c, nil
		}
		_ = c.SetWriteDeadline(time.Now().Add(20 * time.Second))
		if _, err := c.Write(kind.hello); err != nil {
			c.Close()
			return nil, err
		}
		return c, nil
	})
	closeFlood := func() {
		for _, c := range conns {
			c.Close()
		}
		conns = nil
	}
	defer closeFlood()
	if err != nil {
		return res, err
	}
	fds := 0
	if err := waitUntil(60*time.Second, func() (bool, error) {
		fds, err = procFDs(pid)
		return fds >= fd0+n, err
	}); err != nil {
		return res, fmt.Errorf("the server did not take all %d connections: %d descriptors, %d before the flood: %w", n, fds, fd0, err)
	}
	// A server that has not read what the flood sent yet would be
	// measured before it paid for it; one that never reads it is
	// reported (unread).
	_ = waitUntil(10*time.Second, func() (bool, error) {
		s, err := socketsOn(port)
		res.unread = s.unread
		return s.unread == 0, err
	})
	if res.tlsIdleResult, err = base.perConn(n); err != nil {
		return res, err
	}
	cfg, err := tlsClientConfig(files.CA, tls.VersionTLS13)
	if err != nil {
		return res, err
	}
	res.probe, res.probeErr = realClient(addr, cfg, bound)
	closeFlood()
	// The server sees the flood's ends (EOF) and lets its goroutines go.
	err = waitUntil(30*time.Second, func() (bool, error) {
		st, err := serverStatsOf(pid, statsFile)
		res.goroutinesAfter = st.Goroutines
		return st.Goroutines <= base.stats.Goroutines, err
	})
	if err != nil {
		return res, fmt.Errorf("goroutines after the flood closed: %d, before it %d: %w", res.goroutinesAfter, base.stats.Goroutines, err)
	}
	if _, err := realClient(addr, cfg, bound); err != nil {
		return res, fmt.Errorf("no TLS echo after the flood closed: %w", err)
	}
	return res, nil
}

// realClient dials addr, handshakes with cfg and echoes 16 bytes, all
// within bound, and returns the time it took (bound if it failed).
func realClient(addr string, cfg *tls.Config, bound time.Duration) (time.Duration, error) {
	t0 := time.Now()
	d := &net.Dialer{Deadline: t0.Add(bound)}
	c, err := tls.DialWithDialer(d, "tcp", addr, cfg)
	if err != nil {
		return bound, err
	}
	defer c.Close()
	if err := c.SetDeadline(t0.Add(bound)); err != nil {
		return bound, err
	}
	msg := []byte("0123456789abcdef")
	if _, err := c.Write(msg); err != nil {
		return bound, err
	}
	got := make([]byte, len(msg))
	for read := 0; read < len(got); {
		k, err := c.Read(got[read:])
		if err != nil {
			return bound, err
		}
		read += k
	}
	if !bytes.Equal(got, msg) {
		return bound, fmt.Errorf("echoed %q", got)
	}
	return time.Since(t0), nil
}

// errWaitTimeout is what waitUntil returns when its time is up.
var errWaitTimeout = errors.New("condition not met in time")

// waitUntil polls cond every 50 ms until it holds, fails, or timeout
// passes: what it watches (a process's descriptors, its sockets' queues)
// has no event to wait on.
func waitUntil(timeout time.Duration, cond func() (bool, error)) error {
	deadline := time.Now().Add(timeout)
	for {
		ok, err := cond()
		switch {
		case err != nil:
			return err
		case ok:
			return nil
		case time.Now().After(deadline):
			return fmt.Errorf("%w (%v)", errWaitTimeout, timeout)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// procFDs is the number of descriptors process pid has open.
func procFDs(pid int) (int, error) {
	ents, err := os.ReadDir(fmt.Sprintf("/proc/%d/fd", pid))
	return len(ents), err
}

// serverSockets counts a loopback port's server side of connections
// (local port the port, the listening socket aside), from /proc/net/tcp.
type serverSockets struct {
	unread    int // with bytes received that the server has not read (rx_queue)
	closeWait int // closed by the peer, not yet by the server (CLOSE_WAIT)
}

// socketsOn reads serverSockets for port.
func socketsOn(port int) (serverSockets, error) {
	var s serverSockets
	b, err := os.ReadFile("/proc/net/tcp")
	if err != nil {
		return s, err
	}
	suffix := fmt.Sprintf(":%04X", port)
	for _, line := range strings.Split(string(b), "\n")[1:] {
		f := strings.Fields(line)
		if len(f) < 5 || !strings.HasSuffix(f[1], suffix) || f[3] == "0A" { // 0A: LISTEN
			continue
		}
		if f[3] == "08" { // CLOSE_WAIT
			s.closeWait++
		}
		_, rx, ok := strings.Cut(f[4], ":")
		if v, err := strconv.ParseUint(rx, 16, 64); ok && err == nil && v > 0 {
			s.unread++
		}
	}
	return s, nil
}
