//go:build linux

package main

// Scenario 10, idle TLS connections: each TLS echo server, unpinned, gets
// N connections from this process (crypto/tls clients), each of which
// echoes 16 bytes once and then stays open and idle. The figures, per
// connection: the growth of the server's resident set (VmRSS), and of
// its live heap after a collection (the server reports it at SIGUSR1,
// server_tls.go); and the server's goroutines with all N open, which for
// netloop is what the issue asks to be a small constant.

import (
	"encoding/json"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"syscall"
	"time"
)

// tlsIdleResult is one pass of one server.
type tlsIdleResult struct {
	rssKiB, heapKiB float64 // per connection
	goroutines      int     // with all connections open
}

func (r *Runner) tlsIdle(sec *Section, files tlsFiles) error {
	sec.Notes = append(sec.Notes, "idle: load average "+loadAvg()+" at the start")
	n := 10_000
	if r.o.quick {
		n = 100
	}
	passes := r.passes(3)
	rss, heap, gor := map[string]*Sample{}, map[string]*Sample{}, map[string]*Sample{}
	for pass := range passes {
		for _, name := range tlsNames {
			res, err := r.tlsIdleOnce(files, name, n)
			if err != nil {
				if name == tlsUnipoll {
					return fmt.Errorf("%s, %d idle connections: %w", name, n, err)
				}
				sec.Notes = append(sec.Notes, fmt.Sprintf("idle: %s failed: %v", name, err))
				r.logf("  %d idle TLS connections %s failed: %v", n, name, err)
				continue
			}
			for _, f := range []struct {
				m map[string]*Sample
				v float64
			}{{rss, res.rssKiB}, {heap, res.heapKiB}, {gor, float64(res.goroutines)}} {
				if f.m[name] == nil {
					f.m[name] = &Sample{}
				}
				f.m[name].add(f.v)
			}
			r.logf("  %d idle TLS connections pass %d/%d %-11s RSS %.2f KiB/conn  heap %.2f KiB/conn  %d goroutines  (load %s)",
				n, pass+1, passes, name, res.rssKiB, res.heapKiB, res.goroutines, loadAvg())
		}
	}
	row := func(what, unit string, m map[string]*Sample, t Target) Row {
		get := func(k string) Sample {
			if m[k] == nil {
				return Sample{}
			}
			return *m[k]
		}
		return Row{What: what, Unit: unit, Unipoll: get(tlsUnipoll), RatioTo: tlsGoNet, Target: t,
			Baselines: []Named{{tlsGoNet, get(tlsGoNet)}, {tlsNbio, get(tlsNbio)}}}
	}
	sec.Rows = append(sec.Rows,
		row(fmt.Sprintf("TLS, memory per idle connection (%d connections, VmRSS growth)", n), "KiB", rss, Target{Max: 0.5}),
		row(fmt.Sprintf("TLS, live heap per idle connection (%d connections, after GC)", n), "KiB", heap, Target{}),
		row(fmt.Sprintf("TLS, server goroutines with %d idle connections", n), "", gor, Target{Abs: true, Max: 16, Text: "a small constant (≤ 16)"}))
	sec.Notes = append(sec.Notes, fmt.Sprintf("idle: %d TLS connections (TLS 1.3) from the runner, each echoing 16 bytes once, to a fresh unpinned server per pass, %d passes alternating; VmRSS after minus before, over %d; the live heap and goroutines as the server reports them at SIGUSR1 (after runtime.GC; the reporting goroutine not counted)", n, passes, n))
	return nil
}

// tlsIdleOnce starts server name, opens n idle TLS connections to it and
// reads what they cost.
func (r *Runner) tlsIdleOnce(files tlsFiles, name string, n int) (tlsIdleResult, error) {
	var res tlsIdleResult
	statsFile := filepath.Join(r.buildDir, fmt.Sprintf("tls-stats-%s.json", name))
	os.Remove(statsFile)
	port, err := freePort()
	if err != nil {
		return res, err
	}
	cmd := r.tlsStart(files, name, statsFile)(-1, port)
	var out tail
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		return res, err
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	defer stopProcess(cmd, exited)
	addr := fmt.Sprintf("127.0.0.1:%d", port)
	if err := waitListening(addr, exited, 20*time.Second); err != nil {
		return res, fmt.Errorf("%w: %s", err, out.String())
	}
	pid := cmd.Process.Pid
	base, err := serverBaseOf(pid, statsFile)
	if err != nil {
		return res, err
	}
	cfg, err := tlsClientConfig(files.CA, 0)
	if err != nil {
		return res, err
	}
	conns, err := dialAllWith(addr, n, tlsWrap(cfg))
	defer func() {
		for _, c := range conns {
			c.Close()
		}
	}()
	if err != nil {
		return res, err
	}
	for _, c := range conns {
		if err := echoOnce16(c); err != nil {
			return res, fmt.Errorf("a connection's echo: %w", err)
		}
	}
	return base.perConn(n)
}

// serverBase is a TLS server's memory before connections are opened.
type serverBase struct {
	pid       int
	statsFile string
	rss       int64 // VmRSS, bytes
	stats     serverStats
}

func serverBaseOf(pid int, statsFile string) (serverBase, error) {
	b := serverBase{pid: pid, statsFile: statsFile}
	var err error
	if b.stats, err = serverStatsOf(pid, statsFile); err != nil {
		return b, err
	}
	b.rss, err = procRSS(pid)
	return b, err
}

// perConn is the server's growth since b over n connections, and its
// goroutines now.
func (b serverBase) perConn(n int) (tlsIdleResult, error) {
	rss, err := procRSS(b.pid)
	if err != nil {
		return tlsIdleResult{}, err
	}
	now, err := serverStatsOf(b.pid, b.statsFile)
	if err != nil {
		return tlsIdleResult{}, err
	}
	return tlsIdleResult{
		rssKiB:     float64(rss-b.rss) / float64(n),
		heapKiB:    (float64(now.HeapAlloc) - float64(b.stats.HeapAlloc)) / 1024 / float64(n),
		goroutines: now.Goroutines,
	}, nil
}

// echoOnce16 sends 16 bytes on c and reads their echo.
func echoOnce16(c net.Conn) error {
	if err := c.SetDeadline(time.Now().Add(20 * time.Second)); err != nil {
		return err
	}
	msg := []byte("0123456789abcdef")
	if _, err := c.Write(msg); err != nil {
		return err
	}
	got := make([]byte, len(msg))
	for read := 0; read < len(got); {
		k, err := c.Read(got[read:])
		if err != nil {
			return err
		}
		read += k
	}
	if string(got) != string(msg) {
		return fmt.Errorf("echoed %q", got)
	}
	return c.SetDeadline(time.Time{})
}

// serverStatsOf asks the server pid for its stats (SIGUSR1) and waits
// for the file it writes.
func serverStatsOf(pid int, file string) (serverStats, error) {
	var st serverStats
	os.Remove(file)
	if err := syscall.Kill(pid, syscall.SIGUSR1); err != nil {
		return st, err
	}
	deadline := time.Now().Add(30 * time.Second)
	for {
		b, err := os.ReadFile(file)
		if err == nil {
			return st, json.Unmarshal(b, &st)
		}
		if time.Now().After(deadline) {
			return st, fmt.Errorf("no stats from server %d in %s: %v", pid, file, err)
		}
		time.Sleep(10 * time.Millisecond) // polling a file the server writes; no event to wait on
	}
}
