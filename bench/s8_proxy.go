//go:build linux

package main

// Scenario 8, a TCP proxy over loopback: examples/proxy (netloop.Relay,
// and -mode copy beside it) against a Go net proxy (server_netproxy.go: two goroutines with io.Copy per pair, which
// splices) and against no proxy at all (the load straight at the backend),
// with the C floor's echo (or examples/echo, where there is no C compiler)
// as the backend. The load is the echo scenario's (echo_load.go): a closed
// loop of one message in flight per connection, so one message is one
// round trip through the proxy, and the proxy relays its bytes twice (to
// the backend and back).
//
// The figures: the proxy's CPU time per message and per MiB relayed (both
// ways counted: 2 x size per message), its p99 round trip, and its memory
// per idle pair (the rise of its resident set when pairs connect and
// exchange one byte each, divided by the pairs). For the direct runs the
// "server" is the backend itself: its CPU per message is the floor a proxy
// adds to.

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

func init() {
	register(Scenario{Num: 8, Name: "proxy", Title: "8. TCP proxy over loopback, examples/proxy vs a Go net proxy and no proxy", Run: runProxy})
}

// proxyContender is one way from the load to the backend.
type proxyContender struct {
	name, about string
	// start starts it on 127.0.0.1:port in front of backend, pinned to
	// cpu (-1: not pinned).
	start func(cpu, port int, backend string) *exec.Cmd
}

// The contenders' names, in the table's order.
const (
	pxUnipoll = "unipoll-proxy"
	pxCopy    = "unipoll-proxy-copy"
	pxGoNet   = "go-net-proxy"
	pxDirect  = "direct"
)

// proxyStats collects one contender's passes at one point.
type proxyStats struct{ rate, p99, cpuMsg, cpuMiB Sample }

type proxyKey struct {
	cfg  echoConfig
	name string
}

func runProxy(r *Runner) (*Section, error) {
	sec := &Section{Title: "8. TCP proxy"}
	backend, backendName, err := proxyBackend(r)
	if err != nil {
		return nil, err
	}
	contenders, err := r.proxyContenders(backend, backendName)
	if err != nil {
		return nil, err
	}
	for _, c := range contenders {
		sec.Notes = append(sec.Notes, fmt.Sprintf("%s: %s", c.name, c.about))
	}
	sec.Notes = append(sec.Notes, "backend: "+backendName+", pinned to the proxy's CPU where the machine allows (both are the server side)")

	cfgs := r.proxyConfigs()
	warmup, dur := r.dur(500*time.Millisecond, 200*time.Millisecond), r.dur(2*time.Second, 500*time.Millisecond)
	passes := r.passes(3)
	stats := map[proxyKey]*proxyStats{}
	for _, cfg := range cfgs {
		for pass := range passes {
			for _, c := range contenders {
				res, err := r.proxyOnce(c, backend, cfg, warmup, dur)
				if err != nil {
					return nil, fmt.Errorf("%s, %v: %w", c.name, cfg, err)
				}
				k := proxyKey{cfg, c.name}
				if stats[k] == nil {
					stats[k] = &proxyStats{}
				}
				st, msgs := stats[k], float64(max(res.Msgs, 1))
				cpu := float64(res.ServerCPU.Nanoseconds())
				st.rate.add(msgs / res.Window.Seconds())
				st.p99.add(res.P99)
				st.cpuMsg.add(cpu / msgs)
				st.cpuMiB.add(cpu / (msgs * 2 * float64(cfg.Size) / (1 << 20)))
				r.logf("  %v pass %d/%d %-13s %7.0f msg/s  p99 %-9s cpu/msg %-9s cpu/MiB %s", cfg, pass+1, passes, c.name,
					msgs/res.Window.Seconds(), formatValue(res.P99, "ns"), formatValue(cpu/msgs, "ns"), formatValue(st.cpuMiB.Runs[len(st.cpuMiB.Runs)-1], "ns"))
			}
		}
	}

	pairs := 1000
	if r.o.quick {
		pairs = 100
	}
	mem := map[string]*Sample{}
	for pass := range passes {
		for _, c := range contenders[:len(contenders)-1] {
			kib, err := r.idlePairMemory(c, backend, pairs)
			if err != nil {
				return nil, fmt.Errorf("%s, memory per idle pair: %w", c.name, err)
			}
			if mem[c.name] == nil {
				mem[c.name] = &Sample{}
			}
			mem[c.name].add(kib)
			r.logf("  %d idle pairs pass %d/%d %-13s %.2f KiB per pair", pairs, pass+1, passes, c.name, kib)
		}
	}

	names := []string{pxUnipoll, pxCopy, pxGoNet, pxDirect}
	get := func(cfg echoConfig, n string) *proxyStats {
		if s := stats[proxyKey{cfg, n}]; s != nil {
			return s
		}
		return &proxyStats{}
	}
	for _, cfg := range cfgs {
		// Per message and per MiB are the same CPU time over the same
		// messages, so their ratio is the same: the row shows the one
		// that speaks for the size.
		what, pick := "server CPU per message", func(s *proxyStats) Sample { return s.cpuMsg }
		if cfg.Size >= 1024 {
			what, pick = "server CPU per MiB relayed", func(s *proxyStats) Sample { return s.cpuMiB }
		}
		for _, m := range []struct {
			what   string
			get    func(*proxyStats) Sample
			target Target
		}{
			{what, pick, Target{Max: 0.9}},
			{"p99 round trip", func(s *proxyStats) Sample { return s.p99 }, Target{}},
		} {
			row := Row{What: fmt.Sprintf("proxy %v, %s", cfg, m.what), Unit: "ns",
				Unipoll: m.get(get(cfg, pxUnipoll)), RatioTo: pxGoNet, Target: m.target}
			for _, n := range names[1:] {
				row.Baselines = append(row.Baselines, Named{n, m.get(get(cfg, n))})
			}
			sec.Rows = append(sec.Rows, row)
		}
	}
	memRow := Row{What: fmt.Sprintf("proxy, memory per idle pair (%d pairs)", pairs), Unit: "KiB",
		Unipoll: *mem[pxUnipoll], RatioTo: pxGoNet, Target: Target{Max: 0.25},
		Baselines: []Named{{pxCopy, *mem[pxCopy]}, {pxGoNet, *mem[pxGoNet]}}}
	sec.Rows = append(sec.Rows, memRow)

	table := func(title, unit string, pick func(*proxyStats) Sample) string {
		var b strings.Builder
		fmt.Fprintf(&b, "%s:\n\n| point | %s |\n|---|%s\n", title, strings.Join(names, " | "), strings.Repeat("---|", len(names)))
		for _, cfg := range cfgs {
			fmt.Fprintf(&b, "| %v |", cfg)
			for _, n := range names {
				s := pick(get(cfg, n))
				fmt.Fprintf(&b, " %s (±%.0f%%) |", formatValue(s.Median(), unit), 100*s.Spread())
			}
			b.WriteString("\n")
		}
		return b.String()
	}
	sec.Details = append(sec.Details,
		table("Messages per second (thousands)", "k", func(s *proxyStats) Sample {
			var o Sample
			for _, v := range s.rate.Runs {
				o.add(v / 1e3)
			}
			return o
		}),
		table("99th-percentile round trip", "ns", func(s *proxyStats) Sample { return s.p99 }),
		table("Server CPU time per message (direct: the backend's)", "ns", func(s *proxyStats) Sample { return s.cpuMsg }),
		table("Server CPU time per MiB relayed, both ways counted", "ns", func(s *proxyStats) Sample { return s.cpuMiB }),
	)
	sec.Notes = append(sec.Notes, fmt.Sprintf("each point: %d passes alternating between contenders, fresh processes per pass, %v of warm-up then a %v window; memory per idle pair: VmRSS after %d pairs each exchanged one byte, minus VmRSS before, over %d", passes, warmup, dur, pairs, pairs))
	return sec, nil
}

// proxyContenders builds examples/proxy and returns the contenders, the
// proxies first (examples/proxy in both modes, then Go's), in front of
// backend; the last is no proxy.
func (r *Runner) proxyContenders(backend func(cpu, port int) *exec.Cmd, backendName string) ([]proxyContender, error) {
	bin := filepath.Join(r.buildDir, "unipoll-proxy")
	if err := build(r.o.lib, "go", "build", "-o", bin, "./examples/proxy"); err != nil {
		return nil, err
	}
	return []proxyContender{
		{pxUnipoll, "examples/proxy of the library under test, one Loop, a pair of Conns per client, netloop.Relay (splice)", func(cpu, port int, b string) *exec.Cmd {
			return pinned(cpu, bin, "-listen", fmt.Sprintf("127.0.0.1:%d", port), "-backend", b, "-idle-timeout", "0")
		}},
		{pxCopy, "examples/proxy -mode copy: the same, the handlers copying through the Conns' buffers", func(cpu, port int, b string) *exec.Cmd {
			return pinned(cpu, bin, "-listen", fmt.Sprintf("127.0.0.1:%d", port), "-backend", b, "-idle-timeout", "0", "-mode", "copy")
		}},
		{pxGoNet, "Go net, two goroutines with io.Copy per pair (splice)", func(cpu, port int, b string) *exec.Cmd {
			return pinned(cpu, r.self, "-role", "server", "--", "-server", pxGoNet, "-addr", fmt.Sprintf("127.0.0.1:%d", port), "-backend", b)
		}},
		{pxDirect, "no proxy: the load straight at the backend (" + backendName + ")", func(cpu, port int, _ string) *exec.Cmd {
			return backend(cpu, port)
		}},
	}, nil
}

// proxyConfigs are the points: 100 and 1,000 pairs, 16 B and 64 KiB
// messages (-conns and -sizes select among them); -quick measures 100
// pairs at both sizes.
func (r *Runner) proxyConfigs() []echoConfig {
	pin := r.o.pin != "off" && r.m.canPin()
	conns := []int{100, 1000}
	if r.o.quick {
		conns = conns[:1]
	}
	keep := func(list string, v int) bool {
		return list == "" || strings.Contains(","+list+",", ","+strconv.Itoa(v)+",")
	}
	var out []echoConfig
	for _, n := range conns {
		for _, size := range []int{16, 64 << 10} {
			if keep(r.o.conns, n) && keep(r.o.sizes, size) {
				out = append(out, echoConfig{Conns: n, Size: size, Pinned: pin})
			}
		}
	}
	return out
}

// proxyBackend builds the backend: the C floor's echo, or examples/echo
// where there is no C compiler.
func proxyBackend(r *Runner) (func(cpu, port int) *exec.Cmd, string, error) {
	for _, s := range echoServers {
		if s.Name != "c-floor" {
			continue
		}
		start, err := s.Prepare(r)
		if err == nil {
			return start, "the C floor's echo (floor/echo_epoll.c)", nil
		}
		if !errors.Is(err, errSkip) {
			return nil, "", err
		}
		r.logf("  proxy backend: %v; examples/echo instead", err)
	}
	start, err := buildUnipollEcho(r, r.o.lib, "unipoll-echo")
	return start, "examples/echo", err
}

// startBackend starts the backend on a free port, pinned like the server
// of cfg, and returns its address and a function that stops it.
func (r *Runner) startBackend(backend func(cpu, port int) *exec.Cmd, cfg echoConfig) (string, func(), error) {
	cpu := -1
	if cfg.Pinned && r.m.canPin() {
		cpu = r.m.serverCPU()
	}
	return startListening(backend, cpu)
}

// startListening starts start on a free port and waits until it accepts.
func startListening(start func(cpu, port int) *exec.Cmd, cpu int) (string, func(), error) {
	addr, _, stop, err := startListeningPID(start, cpu)
	return addr, stop, err
}

// startListeningPID is startListening that also returns the process id.
func startListeningPID(start func(cpu, port int) *exec.Cmd, cpu int) (string, int, func(), error) {
	port, err := freePort()
	if err != nil {
		return "", 0, nil, err
	}
	addr := fmt.Sprintf("127.0.0.1:%d", port)
	cmd := start(cpu, port)
	var out tail
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		return "", 0, nil, err
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	stop := func() { stopProcess(cmd, exited) }
	if err := waitListening(addr, exited, 20*time.Second); err != nil {
		stop()
		return "", 0, nil, fmt.Errorf("%w: %s", err, out.String())
	}
	return addr, cmd.Process.Pid, stop, nil
}

// proxyOnce measures c at cfg: a fresh backend, then the echo scenario's
// load through c.
func (r *Runner) proxyOnce(c proxyContender, backend func(cpu, port int) *exec.Cmd, cfg echoConfig, warmup, dur time.Duration) (loadResult, error) {
	baddr := ""
	if c.name != pxDirect {
		addr, stop, err := r.startBackend(backend, cfg)
		if err != nil {
			return loadResult{}, fmt.Errorf("backend: %w", err)
		}
		defer stop()
		baddr = addr
	}
	res, _, err := r.echoOnce(func(cpu, port int) *exec.Cmd { return c.start(cpu, port, baddr) }, cfg, warmup, dur, countNone)
	return res, err
}

// idlePairMemory is c's resident-set growth per pair, in KiB, when pairs
// clients connect through it and each exchanges one byte, so that every
// pair has dialed its backend and passed data both ways, then stays idle.
func (r *Runner) idlePairMemory(c proxyContender, backend func(cpu, port int) *exec.Cmd, pairs int) (float64, error) {
	baddr, stopBackend, err := startListening(backend, -1)
	if err != nil {
		return 0, fmt.Errorf("backend: %w", err)
	}
	defer stopBackend()
	port, err := freePort()
	if err != nil {
		return 0, err
	}
	cmd := c.start(-1, port, baddr)
	var out tail
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		return 0, err
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	defer stopProcess(cmd, exited)
	addr := fmt.Sprintf("127.0.0.1:%d", port)
	if err := waitListening(addr, exited, 20*time.Second); err != nil {
		return 0, fmt.Errorf("%w: %s", err, out.String())
	}
	before, err := procRSS(cmd.Process.Pid)
	if err != nil {
		return 0, err
	}
	conns, err := dialAll(addr, pairs)
	defer func() {
		for _, c := range conns {
			c.Close()
		}
	}()
	if err != nil {
		return 0, err
	}
	for _, c := range conns {
		if err := pingOnce(c); err != nil {
			return 0, fmt.Errorf("a pair's first byte: %w", err)
		}
	}
	after, err := procRSS(cmd.Process.Pid)
	if err != nil {
		return 0, err
	}
	return float64(after-before) / float64(pairs), nil
}

// pingOnce sends one byte on c and reads its echo.
func pingOnce(c net.Conn) error {
	if err := c.SetDeadline(time.Now().Add(20 * time.Second)); err != nil {
		return err
	}
	if _, err := c.Write([]byte{'x'}); err != nil {
		return err
	}
	var b [1]byte
	_, err := io.ReadFull(c, b[:])
	return err
}

// procRSS is a process's resident set in KiB (VmRSS in /proc/PID/status).
func procRSS(pid int) (int64, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0, err
	}
	for _, line := range bytes.Split(b, []byte("\n")) {
		if v, ok := bytes.CutPrefix(line, []byte("VmRSS:")); ok {
			f := strings.Fields(string(v))
			if len(f) == 0 {
				break
			}
			return strconv.ParseInt(f[0], 10, 64)
		}
	}
	return 0, fmt.Errorf("no VmRSS in /proc/%d/status", pid)
}
