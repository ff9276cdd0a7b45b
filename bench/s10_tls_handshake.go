//go:build linux

package main

// Scenario 10, handshakes: full TLS 1.3 handshakes (ECDSA P-256
// certificate, no resumption) per second against each TLS echo server,
// the server pinned to one CPU and the handshake load (-role handshake,
// tls_load.go) to the other, and the server's CPU time per handshake.
// A client's half of a handshake (verifying the chain and the server's
// signature) costs more than the server's, so on two cores the rate may
// be the client's; the server's CPU per handshake is the figure that
// does not depend on it.

import (
	"fmt"
	"strconv"
	"time"
)

func (r *Runner) tlsHandshakes(sec *Section, files tlsFiles) error {
	sec.Notes = append(sec.Notes, "handshakes: load average "+loadAvg()+" at the start")
	srvCPU, loadCPU := -1, -1
	if r.o.pin != "off" && r.m.canPin() {
		srvCPU, loadCPU = r.m.serverCPU(), r.m.loadCPU()
	}
	warmup, dur := r.dur(500*time.Millisecond, 100*time.Millisecond), r.dur(3*time.Second, 300*time.Millisecond)
	const window = 16
	passes := r.passes(3)
	rate, cpu := map[string]*Sample{}, map[string]*Sample{}
	for pass := range passes {
		for _, name := range tlsNames {
			addr, pid, stop, err := startListeningPID(r.tlsStart(files, name, ""), srvCPU)
			if err != nil {
				return fmt.Errorf("%s: %w", name, err)
			}
			var res handshakeResult
			err = r.child(loadCPU, nil, warmup+dur+time.Minute, &res, "handshake", "-addr", addr, "-tls-ca", files.CA,
				"-window", strconv.Itoa(window), "-warmup", warmup.String(), "-dur", dur.String(), "-pid", strconv.Itoa(pid))
			stop()
			if err == nil && res.Errors > 0 {
				err = fmt.Errorf("%d handshakes failed, first: %s", res.Errors, res.FirstErr)
			}
			if err != nil {
				if name == tlsUnipoll {
					return fmt.Errorf("%s, handshakes: %w", name, err)
				}
				sec.Notes = append(sec.Notes, fmt.Sprintf("handshakes: %s failed: %v", name, err))
				r.logf("  handshakes %s failed: %v", name, err)
				continue
			}
			if rate[name] == nil {
				rate[name], cpu[name] = &Sample{}, &Sample{}
			}
			n := float64(max(res.Handshakes, 1))
			rate[name].add(n / res.Window.Seconds())
			cpu[name].add(float64(res.ServerCPU.Nanoseconds()) / n)
			r.logf("  handshakes pass %d/%d %-11s %6.0f/s  server cpu/handshake %s  (load %s)", pass+1, passes, name,
				n/res.Window.Seconds(), formatValue(float64(res.ServerCPU.Nanoseconds())/n, "ns"), loadAvg())
		}
	}
	get := func(m map[string]*Sample, k string) Sample {
		if m[k] == nil {
			return Sample{}
		}
		return *m[k]
	}
	sec.Rows = append(sec.Rows,
		Row{What: "TLS 1.3 handshakes per second (ECDSA P-256)", Unit: "/s", Higher: true,
			Unipoll: get(rate, tlsUnipoll), RatioTo: tlsGoNet, Target: Target{Min: 1},
			Baselines: []Named{{tlsGoNet, get(rate, tlsGoNet)}, {tlsNbio, get(rate, tlsNbio)}}},
		Row{What: "TLS 1.3 handshake, server CPU per handshake", Unit: "ns",
			Unipoll: get(cpu, tlsUnipoll), RatioTo: tlsGoNet,
			Baselines: []Named{{tlsGoNet, get(cpu, tlsGoNet)}, {tlsNbio, get(cpu, tlsNbio)}}})
	sec.Notes = append(sec.Notes, fmt.Sprintf("handshakes: crypto/tls clients offering TLS 1.3 alone, verifying the chain, no session cache, %d in flight, each closed (close_notify) once its handshake is done; server pinned to CPU %d, clients to CPU %d (-1: unpinned); %v of warm-up, a %v window; %d passes alternating, fresh server per pass", window, srvCPU, loadCPU, warmup, dur, passes))
	return nil
}
