//go:build linux

package main

// Scenario 10, TLS: netloop's TLS Conns (crypto/tls driven by the Loop,
// handshakes in a bounded pool) against Go net + crypto/tls (a goroutine
// per connection) and against nbio's TLS (a copy of crypto/tls), each a
// TLS echo server of server_tls.go in a process of its own, with one
// certificate (tls_certs.go, ECDSA P-256) for all. Four parts, each in
// a file of its own:
//
//   - echo (here): the echo scenario's closed loop over TLS, 100 and
//     1,000 connections, 16 B and 1 KiB; server CPU per message and p99;
//   - idle (s10_tls_idle.go): memory per idle TLS connection and the
//     server's goroutines with them all open;
//   - flood (s10_tls_flood.go): the same figures for connections that
//     never finish a handshake, and a real client's handshake meanwhile;
//   - handshakes (s10_tls_handshake.go): full TLS 1.3 handshakes per
//     second and server CPU per handshake;
//   - RESP (s10_tls_resp.go): redis-benchmark --tls against examples/resp
//     and redis-server --tls-port.
//
// Every part notes the load average when it began: the machine is shared,
// and the ratios of one run are what counts.

import (
	"fmt"
	"os/exec"
	"strconv"
	"strings"
	"time"
)

func init() {
	register(Scenario{Num: 10, Name: "tls", Title: "10. TLS: netloop TLS Conns vs Go net + crypto/tls and nbio's TLS", Run: runTLS})
}

// The TLS echo servers' names (tlsServers), in the table's order.
const (
	tlsUnipoll = "tls-unipoll"
	tlsGoNet   = "tls-go-net"
	tlsNbio    = "tls-nbio"
)

var tlsNames = []string{tlsUnipoll, tlsGoNet, tlsNbio}

var tlsAbout = map[string]string{
	tlsUnipoll: "a netloop.Group (one Loop per CPU the process may use: one when pinned), Config.TLS, an echo handler",
	tlsGoNet:   "Go net + crypto/tls: tls.Listen, a goroutine per connection copying through a 4 KiB buffer",
	tlsNbio:    "github.com/lesismal/nbio v1.6.8 with nbio/extension/tls (github.com/lesismal/llib v1.2.2's copy of crypto/tls), its WrapOpen/WrapData echo",
}

// tlsStart is how to start TLS server name on a port, pinned to cpu
// (-1: not pinned), writing its stats to statsFile if not empty, with
// extra server flags.
func (r *Runner) tlsStart(files tlsFiles, name, statsFile string, extra ...string) func(cpu, port int) *exec.Cmd {
	return func(cpu, port int) *exec.Cmd {
		args := []string{"-role", "server", "--", "-server", name, "-addr", fmt.Sprintf("127.0.0.1:%d", port),
			"-tls-cert", files.Cert, "-tls-key", files.Key}
		if statsFile != "" {
			args = append(args, "-stats", statsFile)
		}
		args = append(args, extra...)
		return pinned(cpu, r.self, args...)
	}
}

func runTLS(r *Runner) (*Section, error) {
	sec := &Section{Title: "10. TLS"}
	files, err := writeTLSFiles(r.buildDir)
	if err != nil {
		return nil, err
	}
	for _, n := range tlsNames {
		sec.Notes = append(sec.Notes, fmt.Sprintf("%s: %s", n, tlsAbout[n]))
	}
	for _, part := range []struct {
		name string
		run  func(*Section, tlsFiles) error
	}{{"echo", r.tlsEcho}, {"idle", r.tlsIdle}, {"flood", r.tlsFlood}, {"handshakes", r.tlsHandshakes}, {"resp", r.tlsRESP}} {
		if r.o.parts != "" && !strings.Contains(","+r.o.parts+",", ","+part.name+",") {
			continue // -parts
		}
		if err := part.run(sec, files); err != nil {
			return nil, err
		}
	}
	return sec, nil
}

// tlsEchoStats collects one server's passes at one point.
type tlsEchoStats struct{ rate, p99, cpuMsg Sample }

// tlsEcho measures the TLS echo servers under the echo load over TLS.
func (r *Runner) tlsEcho(sec *Section, files tlsFiles) error {
	sec.Notes = append(sec.Notes, "echo: load average "+loadAvg()+" at the start")
	pin := r.o.pin != "off" && r.m.canPin()
	var cfgs []echoConfig
	conns, sizes := []int{100, 1000}, []int{16, 1024}
	if r.o.quick {
		conns, sizes = conns[:1], sizes[:1]
	}
	keep := func(list string, v int) bool {
		return list == "" || strings.Contains(","+list+",", ","+strconv.Itoa(v)+",")
	}
	for _, n := range conns {
		for _, size := range sizes {
			if keep(r.o.conns, n) && keep(r.o.sizes, size) {
				cfgs = append(cfgs, echoConfig{Conns: n, Size: size, Pinned: pin})
			}
		}
	}
	warmup, dur := r.dur(500*time.Millisecond, 200*time.Millisecond), r.dur(2*time.Second, 500*time.Millisecond)
	passes := r.passes(3)
	stats := map[string]*tlsEchoStats{}
	key := func(cfg echoConfig, n string) string { return fmt.Sprintf("%v/%s", cfg, n) }
	failed := map[string]bool{}
	for _, cfg := range cfgs {
		for pass := range passes {
			for _, n := range tlsNames {
				if failed[key(cfg, n)] {
					continue
				}
				res, _, err := r.echoOnce(r.tlsStart(files, n, ""), cfg, warmup, dur, countNone, "-tls-ca", files.CA)
				if err != nil {
					// A server that fails at a point is reported (in the
					// notes and as a missing figure), and the run goes on.
					failed[key(cfg, n)] = true
					sec.Notes = append(sec.Notes, fmt.Sprintf("echo %v: %s failed: %v", cfg, n, err))
					r.logf("  %v %s failed: %v", cfg, n, err)
					continue
				}
				st := stats[key(cfg, n)]
				if st == nil {
					st = &tlsEchoStats{}
					stats[key(cfg, n)] = st
				}
				msgs := float64(max(res.Msgs, 1))
				st.rate.add(msgs / res.Window.Seconds() / 1e3)
				st.p99.add(res.P99)
				st.cpuMsg.add(float64(res.ServerCPU.Nanoseconds()) / msgs)
				r.logf("  TLS %v pass %d/%d %-11s %7.0f msg/s  p99 %-9s cpu/msg %s  (load %s)", cfg, pass+1, passes, n,
					msgs/res.Window.Seconds(), formatValue(res.P99, "ns"), formatValue(st.cpuMsg.Runs[len(st.cpuMsg.Runs)-1], "ns"), loadAvg())
			}
		}
	}
	get := func(cfg echoConfig, n string) *tlsEchoStats {
		if s := stats[key(cfg, n)]; s != nil {
			return s
		}
		return &tlsEchoStats{}
	}
	for _, cfg := range cfgs {
		for _, m := range []struct {
			what   string
			get    func(*tlsEchoStats) Sample
			target Target
		}{
			{"server CPU per message", func(s *tlsEchoStats) Sample { return s.cpuMsg }, Target{Max: 0.9}},
			{"p99 round trip", func(s *tlsEchoStats) Sample { return s.p99 }, Target{}},
		} {
			row := Row{What: fmt.Sprintf("TLS echo %v, %s", cfg, m.what), Unit: "ns",
				Unipoll: m.get(get(cfg, tlsUnipoll)), RatioTo: tlsGoNet, Target: m.target}
			for _, n := range tlsNames[1:] {
				row.Baselines = append(row.Baselines, Named{n, m.get(get(cfg, n))})
			}
			sec.Rows = append(sec.Rows, row)
		}
	}
	table := func(title, unit string, pick func(*tlsEchoStats) Sample) string {
		var b strings.Builder
		fmt.Fprintf(&b, "%s:\n\n| point | %s |\n|---|%s\n", title, strings.Join(tlsNames, " | "), strings.Repeat("---|", len(tlsNames)))
		for _, cfg := range cfgs {
			fmt.Fprintf(&b, "| %v |", cfg)
			for _, n := range tlsNames {
				s := pick(get(cfg, n))
				fmt.Fprintf(&b, " %s (±%.0f%%) |", formatValue(s.Median(), unit), 100*s.Spread())
			}
			b.WriteString("\n")
		}
		return b.String()
	}
	sec.Details = append(sec.Details,
		table("TLS echo, messages per second (thousands)", "k", func(s *tlsEchoStats) Sample { return s.rate }),
		table("TLS echo, 99th-percentile round trip", "ns", func(s *tlsEchoStats) Sample { return s.p99 }),
		table("TLS echo, server CPU time per message", "ns", func(s *tlsEchoStats) Sample { return s.cpuMsg }))
	sec.Notes = append(sec.Notes, fmt.Sprintf("echo: the echo scenario's load generator over TLS (crypto/tls clients, any version: TLS 1.3 here), the handshakes before the window; each point %d passes alternating between servers, fresh processes per pass, %v of warm-up then a %v window", passes, warmup, dur))
	return nil
}
