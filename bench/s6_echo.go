//go:build linux

package main

// Scenario 6, TCP echo over loopback: every server of echo_servers.go under
// the same load generator (echo_load.go), each in a process of its own,
// server and load pinned to different cores where the machine allows. Per
// point: messages per second, 99th-percentile round trip, the server's CPU
// time per message (utime+stime from /proc/PID/stat over the window), its
// context switches per message, and with -syscalls its system calls per
// message (strace -c -f on a separate short run: strace slows the server
// down by an order of magnitude, so its rates mean nothing, but its counts
// per message do).
//
// On two cores the client is often the bottleneck and messages per second
// barely move between servers; CPU per message is the fair figure.

import (
	"cmp"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"time"
)

func init() {
	register(Scenario{Num: 6, Name: "echo", Title: "6. TCP echo over loopback, unipoll vs the C floor and Go peers", Run: runEcho})
}

// echoStats collects one server's passes at one point.
type echoStats struct {
	rate, p99, cpu, switches Sample            // msgs/s, ns, ns/msg, switches/msg
	sys                      *syscallCount     // strace's breakdown
	sysMsgs                  uint64            // messages in the strace run
	perfSys                  Sample            // perf stat's total per message, at full speed
	perfCalls                map[string]uint64 // perf stat's counts by call, summed over its passes
	perfMsgs                 uint64            // messages in those passes
}

type echoKey struct {
	cfg    echoConfig
	server string
}

func (r *Runner) echoConfigs() []echoConfig {
	all := r.echoConfigsAll()
	keep := func(list string, v int) bool {
		return list == "" || slices.Contains(strings.Split(list, ","), strconv.Itoa(v))
	}
	var out []echoConfig
	for _, c := range all {
		if keep(r.o.conns, c.Conns) && keep(r.o.sizes, c.Size) {
			out = append(out, c)
		}
	}
	return out
}

func (r *Runner) echoConfigsAll() []echoConfig {
	if r.o.quick {
		return []echoConfig{{Conns: 100, Size: 16, Pinned: r.m.canPin()}}
	}
	var out []echoConfig
	for _, conns := range []int{100, 1000, 10000} {
		for _, size := range []int{16, 1024} {
			out = append(out, echoConfig{Conns: conns, Size: size, Pinned: r.o.pin != "off" && r.m.canPin()})
		}
	}
	if r.o.pin == "auto" && r.m.canPin() {
		// The targets ask for unpinned figures at 100 and 1,000.
		for _, conns := range []int{100, 1000} {
			for _, size := range []int{16, 1024} {
				out = append(out, echoConfig{Conns: conns, Size: size})
			}
		}
	}
	return out
}

func runEcho(r *Runner) (*Section, error) {
	sec := &Section{Title: "6. TCP echo"}
	type ready struct {
		echoServer
		start func(cpu, port int) *exec.Cmd
	}
	var servers []ready
	for _, s := range echoServers {
		if s.Pending != "" {
			sec.Notes = append(sec.Notes, fmt.Sprintf("%s: not built yet (%s)", s.Name, s.Pending))
			continue
		}
		start, err := s.Prepare(r)
		if errors.Is(err, errSkip) {
			r.logf("  %s: %v", s.Name, err)
			sec.Notes = append(sec.Notes, fmt.Sprintf("%s: %v", s.Name, err))
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("%s: %w", s.Name, err)
		}
		if s.Name != "unipoll" && r.o.servers != "" && !slices.Contains(strings.Split(r.o.servers, ","), s.Name) {
			continue
		}
		servers = append(servers, ready{s, start})
		sec.Notes = append(sec.Notes, fmt.Sprintf("%s: %s", s.Name, s.About))
		if s.Name != "unipoll" && s.Name != "unipoll-loop" {
			continue
		}
		// An environment variant (a backend, a wait mode) is measured on the
		// raw Poll and on the Loop alike; another checkout on the raw Poll.
		for i, v := range r.o.variants {
			if v.lib != "" && s.Name != "unipoll" {
				continue
			}
			if v.lib != "" {
				vstart, err := buildUnipollEcho(r, v.lib, fmt.Sprintf("unipoll-echo-%d", i))
				if err != nil {
					return nil, fmt.Errorf("%s: %w", v.name, err)
				}
				servers = append(servers, ready{echoServer{Name: v.name}, vstart})
				sec.Notes = append(sec.Notes, fmt.Sprintf("%s: examples/echo of %s", v.name, v.lib))
				continue
			}
			name := s.Name + strings.TrimPrefix(v.name, "unipoll")
			servers = append(servers, ready{echoServer{Name: name}, func(cpu, port int) *exec.Cmd {
				cmd := start(cpu, port)
				cmd.Env = append(os.Environ(), v.env...)
				return cmd
			}})
			sec.Notes = append(sec.Notes, fmt.Sprintf("%s: %s with %s", name, s.Name, strings.Join(v.env, " ")))
		}
	}
	if len(servers) == 0 || servers[0].Name != "unipoll" {
		return nil, errors.New("the unipoll echo server could not be built")
	}
	names := make([]string, len(servers))
	for i, s := range servers {
		names[i] = s.Name
	}
	floor := "c-floor"
	if !slices.Contains(names, floor) {
		floor = "go-net"
	}

	warmup, dur := r.dur(500*time.Millisecond, 200*time.Millisecond), r.dur(2*time.Second, 500*time.Millisecond)
	passes := r.passes(3)
	cfgs := r.echoConfigs()
	stats := map[echoKey]*echoStats{}
	// A server that fails at a point (it runs out of descriptors, say) is
	// reported in a note and left out of that point; the run goes on.
	failed := map[echoKey]bool{}
	for _, cfg := range cfgs {
		for pass := range passes {
			for _, s := range servers {
				if failed[echoKey{cfg, s.Name}] {
					continue
				}
				res, _, err := r.echoOnce(s.start, cfg, warmup, dur, countNone)
				if err != nil && s.Name != "unipoll" {
					failed[echoKey{cfg, s.Name}] = true
					r.logf("  %v %s failed: %v", cfg, s.Name, err)
					sec.Notes = append(sec.Notes, fmt.Sprintf("%s at %v failed and is left out there: %v", s.Name, cfg, err))
					continue
				}
				if err != nil {
					return nil, fmt.Errorf("%s, %v: %w", s.Name, cfg, err)
				}
				k := echoKey{cfg, s.Name}
				if stats[k] == nil {
					stats[k] = &echoStats{}
				}
				st, msgs := stats[k], float64(max(res.Msgs, 1))
				st.rate.add(msgs / res.Window.Seconds())
				st.p99.add(res.P99)
				st.cpu.add(float64(res.ServerCPU.Nanoseconds()) / msgs)
				st.switches.add(float64(res.Switches) / msgs)
				r.logf("  %v pass %d/%d %-8s %7.0f msg/s  p99 %-9s cpu/msg %-9s switches/msg %.3f", cfg, pass+1, passes, s.Name,
					msgs/res.Window.Seconds(), formatValue(res.P99, "ns"), formatValue(float64(res.ServerCPU.Nanoseconds())/msgs, "ns"), float64(res.Switches)/msgs)
			}
		}
	}
	var sysCfgs []echoConfig
	if r.o.syscalls {
		sysCfgs = []echoConfig{{Conns: 100, Size: 16, Pinned: r.m.canPin()}, {Conns: 100, Size: 1024, Pinned: r.m.canPin()}}
		if r.o.quick {
			sysCfgs = sysCfgs[:1]
		}
		usePerf, useStrace := true, true
		for _, cfg := range sysCfgs {
			for pass := range passes {
				for _, s := range servers {
					k := echoKey{cfg, s.Name}
					if stats[k] == nil {
						stats[k] = &echoStats{}
					}
					if failed[k] {
						continue
					}
					if usePerf {
						res, sc, err := r.echoOnce(s.start, cfg, warmup, dur, countPerf)
						if errors.Is(err, errSkip) {
							sec.Notes = append(sec.Notes, fmt.Sprintf("system calls at full speed: %v", err))
							usePerf = false
						} else if err != nil {
							return nil, fmt.Errorf("%s, %v, perf: %w", s.Name, cfg, err)
						} else {
							perMsg := float64(sc.Total) / float64(max(res.AllMsgs, 1))
							stats[k].perfSys.add(perMsg)
							stats[k].addPerfCalls(sc, res.AllMsgs)
							r.logf("  %v perf pass %d/%d %-8s %.2f system calls per message", cfg, pass+1, passes, s.Name, perMsg)
						}
					}
					if !useStrace || pass > 0 {
						continue
					}
					res, sc, err := r.echoOnce(s.start, cfg, 0, r.dur(time.Second, 300*time.Millisecond), countStrace)
					if errors.Is(err, errSkip) {
						sec.Notes = append(sec.Notes, fmt.Sprintf("system calls by name: %v", err))
						useStrace = false
						continue
					}
					if err != nil {
						return nil, fmt.Errorf("%s, %v, strace: %w", s.Name, cfg, err)
					}
					stats[k].sys, stats[k].sysMsgs = sc, res.AllMsgs
					r.logf("  %v strace %-8s %.2f system calls per message", cfg, s.Name, float64(sc.Total)/float64(max(res.AllMsgs, 1)))
				}
			}
		}
	}

	// Summary rows: CPU per message and p99 for every point; targets where
	// issue 14 sets them (100 and 1,000 connections).
	for _, cfg := range cfgs {
		targeted := cfg.Conns <= 1000
		for _, m := range []struct {
			what string
			unit string
			get  func(*echoStats) Sample
			max  float64
			all  bool
		}{
			{"server CPU per message", "ns", func(s *echoStats) Sample { return s.cpu }, 1.05, true},
			{"p99 round trip", "ns", func(s *echoStats) Sample { return s.p99 }, 1.2, false},
		} {
			row := Row{What: fmt.Sprintf("echo %v, %s", cfg, m.what), Unit: m.unit,
				Unipoll: m.get(statsAt(stats, cfg, "unipoll")), RatioTo: floor}
			for _, n := range names[1:] {
				row.Baselines = append(row.Baselines, Named{n, m.get(statsAt(stats, cfg, n))})
			}
			if targeted {
				row.Target = Target{Max: m.max, BelowPeers: m.all, NotPeers: slices.Concat(echoFloors, echoUringPeers)}
			}
			sec.Rows = append(sec.Rows, row)
		}
	}
	for _, cfg := range sysCfgs {
		row := Row{What: fmt.Sprintf("echo %v, system calls per message", cfg), Unit: "",
			Unipoll: sysPerMsg(stats[echoKey{cfg, "unipoll"}]), RatioTo: floor, Target: Target{Max: 2.1, Abs: true}}
		for _, n := range names[1:] {
			row.Baselines = append(row.Baselines, Named{n, sysPerMsg(stats[echoKey{cfg, n}])})
		}
		sec.Rows = append(sec.Rows, row)
	}

	// Detail tables: one per figure, a row per point, a column per server.
	table := func(title, unit string, get func(*echoStats) Sample) string {
		var b strings.Builder
		fmt.Fprintf(&b, "%s:\n\n| point | %s |\n|---|%s\n", title, strings.Join(names, " | "), strings.Repeat("---|", len(names)))
		for _, cfg := range cfgs {
			fmt.Fprintf(&b, "| %v |", cfg)
			for _, n := range names {
				s := get(statsAt(stats, cfg, n))
				if len(s.Runs) == 0 {
					b.WriteString(" — |")
					continue
				}
				fmt.Fprintf(&b, " %s (±%.0f%%) |", formatValue(s.Median(), unit), 100*s.Spread())
			}
			b.WriteString("\n")
		}
		return b.String()
	}
	sec.Details = append(sec.Details,
		table("Messages per second (thousands)", "k", func(s *echoStats) Sample {
			var o Sample
			for _, v := range s.rate.Runs {
				o.add(v / 1e3)
			}
			return o
		}),
		table("99th-percentile round trip", "ns", func(s *echoStats) Sample { return s.p99 }),
		table("Server CPU time per message", "ns", func(s *echoStats) Sample { return s.cpu }),
		table("Server context switches per message", "", func(s *echoStats) Sample { return s.switches }),
	)
	if len(sysCfgs) > 0 {
		sec.Details = append(sec.Details, r.syscallTable(sysCfgs, names, stats))
	}
	sec.Notes = append(sec.Notes, fmt.Sprintf("each point: %d passes alternating between servers, a fresh server process per pass, %v of warm-up then a %v window; one message is one round trip of a closed loop (one message in flight per connection)", passes, warmup, dur))
	sec.Charts = append(sec.Charts, echoCharts(cfgs, names, stats)...)
	return sec, nil
}

// sysPerMsg is system calls per message: perf's count at full speed where
// there is one, else strace's.
// statsAt is a server's figures at a point; empty for one that failed there.
func statsAt(stats map[echoKey]*echoStats, cfg echoConfig, server string) *echoStats {
	if s := stats[echoKey{cfg, server}]; s != nil {
		return s
	}
	return &echoStats{}
}

func sysPerMsg(s *echoStats) Sample {
	switch {
	case s == nil:
		return Sample{}
	case len(s.perfSys.Runs) > 0:
		return s.perfSys
	case s.sys == nil || s.sysMsgs == 0:
		return Sample{}
	}
	return Sample{Runs: []float64{float64(s.sys.Total) / float64(s.sysMsgs)}}
}

// addPerfCalls adds one perf pass's counts by call.
func (s *echoStats) addPerfCalls(sc *syscallCount, msgs uint64) {
	if s.perfCalls == nil {
		s.perfCalls = map[string]uint64{}
	}
	for k, v := range sc.ByName {
		s.perfCalls[k] += v
	}
	s.perfMsgs += msgs
}

// topCalls formats the busiest calls of byName per message, at most four,
// leaving out those below 0.005 per message.
func topCalls(byName map[string]uint64, msgs float64) string {
	type kv struct {
		name string
		n    uint64
	}
	var calls []kv
	for k, v := range byName {
		calls = append(calls, kv{k, v})
	}
	slices.SortFunc(calls, func(a, b kv) int {
		if a.n != b.n {
			return cmp.Compare(b.n, a.n)
		}
		return strings.Compare(a.name, b.name)
	})
	var parts []string
	for _, c := range calls[:min(4, len(calls))] {
		if float64(c.n)/msgs >= 0.005 {
			parts = append(parts, fmt.Sprintf("%s %.2f", c.name, float64(c.n)/msgs))
		}
	}
	return strings.Join(parts, ", ")
}

// syscallTable breaks system calls per message down by call.
func (r *Runner) syscallTable(cfgs []echoConfig, names []string, stats map[echoKey]*echoStats) string {
	var b strings.Builder
	b.WriteString("System calls per message: in bold, counted by `perf stat -e raw_syscalls:sys_enter -p PID` over separate runs at full speed (median), and after it, in parentheses, the busiest calls over those runs by their own tracepoints (`syscalls:sys_enter_NAME`, for " + strings.Join(perfCalls, ", ") + "); then `strace -c -f -p PID` over one more short run, which slows the server about tenfold (so sysmon's nanosleep and futex calls weigh more there) but names every call, the busiest first:\n\n")
	fmt.Fprintf(&b, "| point | %s |\n|---|%s\n", strings.Join(names, " | "), strings.Repeat("---|", len(names)))
	for _, cfg := range cfgs {
		fmt.Fprintf(&b, "| %v |", cfg)
		for _, n := range names {
			s := stats[echoKey{cfg, n}]
			if s == nil || s.sys == nil {
				b.WriteString(" — |")
				continue
			}
			msgs := float64(max(s.sysMsgs, 1))
			perf := ""
			if len(s.perfSys.Runs) > 0 {
				perf = fmt.Sprintf("**%.2f**", s.perfSys.Median())
				if c := topCalls(s.perfCalls, float64(max(s.perfMsgs, 1))); c != "" {
					perf += " (" + c + ")"
				}
				perf += " · "
			}
			fmt.Fprintf(&b, " %sstrace %.2f: %s |", perf, float64(s.sys.Total)/msgs, topCalls(s.sys.ByName, msgs))
		}
		b.WriteString("\n")
	}
	return b.String()
}

// echoCharts draws messages per second and CPU per message against
// connections, one chart per message size, pinned points only (or all
// points when nothing was pinned).
func echoCharts(cfgs []echoConfig, names []string, stats map[echoKey]*echoStats) []Chart {
	pinnedAny := slices.ContainsFunc(cfgs, func(c echoConfig) bool { return c.Pinned })
	var charts []Chart
	for _, size := range []int{16, 1024} {
		var pts []echoConfig
		for _, c := range cfgs {
			if c.Size == size && c.Pinned == pinnedAny {
				pts = append(pts, c)
			}
		}
		if len(pts) < 2 {
			continue
		}
		draw := func(get func(*echoStats) float64, title, ylabel string) func(string) error {
			return func(path string) error {
				var ss []series
				for _, n := range names {
					s := series{name: n}
					for _, c := range pts {
						if st := stats[echoKey{c, n}]; st != nil && len(st.rate.Runs) > 0 {
							s.x = append(s.x, float64(c.Conns))
							s.y = append(s.y, get(st))
						}
					}
					ss = append(ss, s)
				}
				return lineChart(path, title, "connections", ylabel, true, false, ss)
			}
		}
		tag := strings.ReplaceAll(sizeText(size), " ", "")
		charts = append(charts,
			Chart{File: "echo_msgs_" + tag + ".png", Title: "Echo messages per second, " + sizeText(size),
				Draw: draw(func(s *echoStats) float64 { return s.rate.Median() / 1e3 }, "Echo, "+sizeText(size)+" messages: throughput", "thousand messages per second")},
			Chart{File: "echo_cpu_" + tag + ".png", Title: "Echo server CPU per message, " + sizeText(size),
				Draw: draw(func(s *echoStats) float64 { return s.cpu.Median() / 1e3 }, "Echo, "+sizeText(size)+" messages: server CPU per message", "µs of server CPU per message")},
		)
	}
	return charts
}
