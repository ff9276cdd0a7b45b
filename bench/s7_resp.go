//go:build linux

package main

// Scenario 7, RESP: examples/resp (one eventloop.Loop) against
// redis-server under redis-benchmark, as users compare Redis-protocol
// servers: `redis-benchmark -c 50 -n N -t ping,set,get`, not pipelined
// and with -P 16. Each pass starts a fresh server (redis-server with
// persistence off), pinned to the first CPU, runs redis-benchmark pinned
// to the second, and reads the server's CPU time from /proc/PID/stat
// around each test. The two servers alternate pass by pass.
//
// Requests per second depend on the client as much as on the server on
// two cores; the server's CPU time per request does not, and is the fair
// figure, as in the echo scenario.

import (
	"bufio"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

func init() {
	register(Scenario{Num: 7, Name: "resp", Title: "7. RESP: examples/resp vs redis-server under redis-benchmark", Run: runRESP})
}

// respServer is one side of the comparison.
type respServer struct {
	name  string
	start func(cpu, port int) *exec.Cmd
}

// respKey names one figure: server, pipelining depth, redis-benchmark test.
type respKey struct {
	server string
	depth  int
	test   string
}

func runRESP(r *Runner) (*Section, error) {
	sec := &Section{Title: "7. RESP"}
	bench, err := exec.LookPath("redis-benchmark")
	if err != nil {
		return skipRESP(sec, "redis-benchmark not installed")
	}
	redis, err := exec.LookPath("redis-server")
	if err != nil {
		return skipRESP(sec, "redis-server not installed")
	}
	bin := filepath.Join(r.buildDir, "resp")
	if err := build(r.o.lib, "go", "build", "-o", bin, "./examples/resp"); err != nil {
		return nil, err
	}
	servers := []respServer{
		{"unipoll", func(cpu, port int) *exec.Cmd {
			return pinned(cpu, bin, "-addr", fmt.Sprintf("127.0.0.1:%d", port), "-loops", "1")
		}},
		{"redis-server", func(cpu, port int) *exec.Cmd {
			return pinned(cpu, redis, "--port", strconv.Itoa(port), "--bind", "127.0.0.1",
				"--save", "", "--appendonly", "no", "--daemonize", "no")
		}},
	}
	// An environment variant (-variant, e.g. the uring backend in
	// completion mode) is one more server, measured in the same passes.
	unipolls := []string{"unipoll"}
	for _, v := range r.o.variants {
		if v.lib != "" {
			continue // another checkout: the echo scenario's alone
		}
		unipolls = append(unipolls, v.name)
		servers = append(servers, respServer{v.name, func(cpu, port int) *exec.Cmd {
			cmd := pinned(cpu, bin, "-addr", fmt.Sprintf("127.0.0.1:%d", port), "-loops", "1")
			cmd.Env = append(os.Environ(), v.env...)
			return cmd
		}})
		sec.Notes = append(sec.Notes, fmt.Sprintf("%s: examples/resp -loops 1 with %s", v.name, strings.Join(v.env, " ")))
	}
	requests := 200_000
	if r.o.quick {
		requests = 10_000
	}
	srvCPU, loadCPU := -1, -1
	if r.m.canPin() {
		srvCPU, loadCPU = r.m.serverCPU(), r.m.loadCPU()
	}
	rps := map[respKey]*Sample{}
	cpu := map[respKey]*Sample{}
	depths := []int{1, 16}
	var tests []string
	for pass := range r.passes(3) {
		for _, s := range servers {
			got, err := r.respPass(s, bench, srvCPU, loadCPU, requests, depths, []string{"ping", "set", "get"})
			if err != nil {
				return nil, fmt.Errorf("%s: %w", s.name, err)
			}
			for _, m := range got {
				k := respKey{s.name, m.depth, m.test}
				if rps[k] == nil {
					rps[k], cpu[k] = &Sample{}, &Sample{}
					if s.name == "unipoll" {
						tests = append(tests, fmt.Sprintf("%d %s", m.depth, m.test))
					}
				}
				rps[k].add(m.rps)
				cpu[k].add(m.cpuPerReq)
				r.logf("  pass %d/%d %-12s -P %-2d %-12s %8.0f req/s  %s/req", pass+1, r.passes(3), s.name, m.depth, m.test, m.rps, formatValue(m.cpuPerReq, "ns"))
			}
		}
	}
	for _, name := range unipolls {
		for _, t := range tests {
			depthText, test, _ := strings.Cut(t, " ")
			depth, _ := strconv.Atoi(depthText)
			if test != "SET" && test != "GET" {
				continue // PING_INLINE and PING_MBULK go to the notes
			}
			sec.Rows = append(sec.Rows, respRows(name, depth, test, rps, cpu)...)
		}
	}
	for _, t := range tests {
		depthText, test, _ := strings.Cut(t, " ")
		depth, _ := strconv.Atoi(depthText)
		if !strings.HasPrefix(test, "PING") {
			continue
		}
		u, b := respKey{"unipoll", depth, test}, respKey{"redis-server", depth, test}
		if rps[u] == nil || rps[b] == nil {
			continue
		}
		sec.Notes = append(sec.Notes, fmt.Sprintf("%s -P %d: unipoll %.0f req/s, %s/req; redis-server %.0f req/s, %s/req",
			test, depth, rps[u].Median(), formatValue(cpu[u].Median(), "ns"), rps[b].Median(), formatValue(cpu[b].Median(), "ns")))
	}
	sec.Notes = append(sec.Notes,
		fmt.Sprintf("command: redis-benchmark -c 50 -n %d -t ping,set,get -P 1|16 -q, pinned to CPU %d, servers to CPU %d (-1: unpinned); %d passes alternating", requests, loadCPU, srvCPU, r.passes(3)),
		"unipoll: examples/resp -loops 1 (one eventloop.Loop); redis-server --save '' --appendonly no",
		"server CPU per request: utime+stime from /proc/PID/stat around each redis-benchmark run (PING runs two tests, so its time is shared between them)")
	return sec, nil
}

// respRows are the rows of one unipoll server (the default, or a variant
// beside it) at one depth and test: against redis-server, and a variant
// also against the default.
func respRows(name string, depth int, test string, rps, cpu map[respKey]*Sample) []Row {
	u, b, d := respKey{name, depth, test}, respKey{"redis-server", depth, test}, respKey{"unipoll", depth, test}
	if rps[u] == nil || rps[b] == nil {
		return nil
	}
	what := fmt.Sprintf("RESP %s -P %d", test, depth)
	rpsBase, cpuBase := []Named{{"redis-server", thousands(*rps[b])}}, []Named{{"redis-server", *cpu[b]}}
	if name != "unipoll" {
		what += " (" + name + ")"
		if rps[d] != nil {
			rpsBase = append(rpsBase, Named{"unipoll", thousands(*rps[d])})
			cpuBase = append(cpuBase, Named{"unipoll", *cpu[d]})
		}
	}
	return []Row{
		{What: what + ", requests per second", Unit: "k/s", Higher: true,
			Unipoll: thousands(*rps[u]), Baselines: rpsBase, RatioTo: "redis-server", Target: Target{Min: 1}},
		{What: what + ", server CPU per request", Unit: "ns",
			Unipoll: *cpu[u], Baselines: cpuBase, RatioTo: "redis-server", Target: Target{Max: 1}},
	}
}

// skipRESP reports why the scenario cannot run here and how to fix that.
func skipRESP(sec *Section, why string) (*Section, error) {
	r := why + "; install it with: apt-get install -y redis-server redis-tools"
	sec.Notes = append(sec.Notes, "skipped: "+r)
	return sec, nil
}

// respMeasure is one redis-benchmark test's outcome.
type respMeasure struct {
	depth     int
	test      string
	rps       float64
	cpuPerReq float64 // ns
}

// respPass starts s, runs every depth and test (redis-benchmark -t)
// against it, with benchArgs added to redis-benchmark's arguments, and
// stops it.
func (r *Runner) respPass(s respServer, bench string, srvCPU, loadCPU, requests int, depths []int, tests []string, benchArgs ...string) ([]respMeasure, error) {
	port, err := freePort()
	if err != nil {
		return nil, err
	}
	cmd := s.start(srvCPU, port)
	var out tail
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	defer stopProcess(cmd, exited)
	if err := waitListening(fmt.Sprintf("127.0.0.1:%d", port), exited, 10*time.Second); err != nil {
		return nil, fmt.Errorf("%w (output: %s)", err, out.String())
	}
	pid := cmd.Process.Pid
	var res []respMeasure
	for _, depth := range depths {
		for _, t := range tests {
			c0, err := procCPU(pid)
			if err != nil {
				return nil, err
			}
			lc := pinned(loadCPU, bench, "-h", "127.0.0.1", "-p", strconv.Itoa(port), "-c", "50",
				"-n", strconv.Itoa(requests), "-t", t, "-P", strconv.Itoa(depth), "-q")
			lc.Args = append(lc.Args, benchArgs...)
			b, err := lc.CombinedOutput()
			if err != nil {
				return nil, fmt.Errorf("redis-benchmark: %v: %s", err, lastLines(string(b), 3))
			}
			c1, err := procCPU(pid)
			if err != nil {
				return nil, err
			}
			got, err := parseRedisBenchmark(string(b))
			if err != nil {
				return nil, err
			}
			perReq := float64(c1-c0) / float64(requests*len(got))
			for name, v := range got {
				res = append(res, respMeasure{depth: depth, test: name, rps: v, cpuPerReq: perReq})
			}
		}
	}
	return res, nil
}

// parseRedisBenchmark reads redis-benchmark -q's "TEST: N requests per
// second" lines (progress lines end in carriage returns).
func parseRedisBenchmark(out string) (map[string]float64, error) {
	got := map[string]float64{}
	sc := bufio.NewScanner(strings.NewReader(strings.ReplaceAll(out, "\r", "\n")))
	for sc.Scan() {
		name, rest, ok := strings.Cut(strings.TrimSpace(sc.Text()), ":")
		if !ok || !strings.Contains(rest, "requests per second") {
			continue
		}
		f := strings.Fields(rest)
		if len(f) == 0 {
			continue
		}
		v, err := strconv.ParseFloat(f[0], 64)
		if err != nil {
			return nil, fmt.Errorf("redis-benchmark line %q: %w", sc.Text(), err)
		}
		got[name] = v
	}
	if len(got) == 0 {
		return nil, errors.New("redis-benchmark printed no result: " + lastLines(out, 3))
	}
	return got, nil
}

// thousands turns a Sample of per-second rates into thousands per second.
func thousands(s Sample) Sample {
	var out Sample
	for _, v := range s.Runs {
		out.add(v / 1e3)
	}
	return out
}
