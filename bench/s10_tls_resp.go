//go:build linux

package main

// Scenario 10, RESP over TLS: scenario 7's comparison with TLS on both
// sides: examples/resp -tls-cert -tls-key (netloop TLS Conns on one
// Loop) against redis-server --tls-port (OpenSSL), under
// `redis-benchmark --tls -c 50 -t set,get`, not pipelined and with
// -P 16, pinned as in scenario 7, the two servers alternating pass by
// pass. Skipped, saying how to install them, where redis-server or
// redis-benchmark is missing.

import (
	"fmt"
	"os/exec"
	"path/filepath"
	"strconv"
)

func (r *Runner) tlsRESP(sec *Section, files tlsFiles) error {
	sec.Notes = append(sec.Notes, "RESP over TLS: load average "+loadAvg()+" at the start")
	bench, err := exec.LookPath("redis-benchmark")
	if err != nil {
		sec.Notes = append(sec.Notes, "RESP over TLS skipped: redis-benchmark not installed; install it with: apt-get install -y redis-server redis-tools")
		return nil
	}
	redis, err := exec.LookPath("redis-server")
	if err != nil {
		sec.Notes = append(sec.Notes, "RESP over TLS skipped: redis-server not installed; install it with: apt-get install -y redis-server redis-tools")
		return nil
	}
	bin := filepath.Join(r.buildDir, "resp")
	if err := build(r.o.lib, "go", "build", "-o", bin, "./examples/resp"); err != nil {
		return err
	}
	servers := []respServer{
		{"unipoll", func(cpu, port int) *exec.Cmd {
			return pinned(cpu, bin, "-addr", fmt.Sprintf("127.0.0.1:%d", port), "-loops", "1",
				"-tls-cert", files.Cert, "-tls-key", files.Key)
		}},
		{"redis-server", func(cpu, port int) *exec.Cmd {
			return pinned(cpu, redis, "--port", "0", "--tls-port", strconv.Itoa(port), "--bind", "127.0.0.1",
				"--tls-cert-file", files.Cert, "--tls-key-file", files.Key, "--tls-auth-clients", "no",
				"--save", "", "--appendonly", "no", "--daemonize", "no")
		}},
	}
	requests := 200_000
	if r.o.quick {
		requests = 5_000
	}
	srvCPU, loadCPU := -1, -1
	if r.o.pin != "off" && r.m.canPin() {
		srvCPU, loadCPU = r.m.serverCPU(), r.m.loadCPU()
	}
	depths, tests := []int{1, 16}, []string{"set", "get"}
	rps, cpu := map[respKey]*Sample{}, map[respKey]*Sample{}
	passes := r.passes(3)
	for pass := range passes {
		for _, s := range servers {
			got, err := r.respPass(s, bench, srvCPU, loadCPU, requests, depths, tests, "--tls", "--cacert", files.CA)
			if err != nil {
				return fmt.Errorf("RESP over TLS, %s: %w", s.name, err)
			}
			for _, m := range got {
				k := respKey{s.name, m.depth, m.test}
				if rps[k] == nil {
					rps[k], cpu[k] = &Sample{}, &Sample{}
				}
				rps[k].add(m.rps)
				cpu[k].add(m.cpuPerReq)
				r.logf("  TLS pass %d/%d %-12s -P %-2d %-4s %8.0f req/s  %s/req  (load %s)", pass+1, passes, s.name, m.depth, m.test, m.rps, formatValue(m.cpuPerReq, "ns"), loadAvg())
			}
		}
	}
	for _, depth := range depths {
		for _, test := range []string{"SET", "GET"} {
			u, b := respKey{"unipoll", depth, test}, respKey{"redis-server", depth, test}
			if rps[u] == nil || rps[b] == nil {
				return fmt.Errorf("RESP over TLS: redis-benchmark reported no %s at -P %d", test, depth)
			}
			sec.Rows = append(sec.Rows,
				Row{What: fmt.Sprintf("RESP over TLS, %s -P %d, requests per second", test, depth), Unit: "k/s", Higher: true,
					Unipoll: thousands(*rps[u]), Baselines: []Named{{"redis-server", thousands(*rps[b])}},
					RatioTo: "redis-server", Target: Target{Min: 1}},
				Row{What: fmt.Sprintf("RESP over TLS, %s -P %d, server CPU per request", test, depth), Unit: "ns",
					Unipoll: *cpu[u], Baselines: []Named{{"redis-server", *cpu[b]}}, RatioTo: "redis-server"})
		}
	}
	sec.Notes = append(sec.Notes,
		fmt.Sprintf("RESP over TLS: redis-benchmark --tls --cacert CA -c 50 -n %d -t set|get -P 1|16 -q, pinned to CPU %d, servers to CPU %d (-1: unpinned); %d passes alternating, a fresh server per pass", requests, loadCPU, srvCPU, passes),
		"RESP over TLS: examples/resp -loops 1 -tls-cert -tls-key; redis-server --port 0 --tls-port P --tls-auth-clients no --save '' --appendonly no")
	return nil
}
