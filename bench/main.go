//go:build linux

// Command bench measures unipoll against the floor and the alternatives a Go
// user would pick, on one machine in one run, and prints a Markdown table.
//
//	go run .                 # every scenario, full length (about 15 minutes on 2 cores)
//	go run . -quick          # every scenario, short (CI keeps it compiling and running)
//	go run . -only echo      # one scenario (see -list)
//	go run . -only echo -syscalls   # also count system calls per message with strace
//	go run . -only wake -variant block:UNIPOLL_WAIT=block   # unipoll once more, with this environment
//
// A full run (no -quick, no -only) also writes RESULTS.md and the charts in
// charts/. The same binary plays every part: the runner re-executes itself
// as an echo server (-role server), a load generator (-role load) or an
// in-process measurement (-role micro), so that what is measured never
// shares a process with what measures it. It builds what is not Go code in
// this module itself: examples/echo from the library, and the C floor with
// the system C compiler. See README.md.
package main

import (
	"flag"
	"fmt"
	"os"
	"strings"
	"time"
)

// variant is unipoll run with extra environment (-variant), or the echo
// server of another checkout (-echo-lib), measured as one more contender
// beside unipoll itself.
type variant struct {
	name string
	env  []string
	lib  string // -echo-lib: the checkout whose examples/echo runs
}

// options are the runner's flags.
type options struct {
	quick    bool
	only     string
	list     bool
	runs     int
	syscalls bool
	results  string
	lib      string
	pin      string
	role     string
	servers  string
	conns    string
	sizes    string
	parts    string
	variants []variant
}

func main() {
	var o options
	flag.BoolVar(&o.quick, "quick", false, "a short run of every scenario: one pass, small sizes")
	flag.StringVar(&o.only, "only", "", "run only the scenario with this name (see -list)")
	flag.BoolVar(&o.list, "list", false, "list the scenarios and exit")
	flag.IntVar(&o.runs, "runs", 0, "passes per measurement, alternating between contenders (default 5, 3 for echo; 1 with -quick)")
	flag.BoolVar(&o.syscalls, "syscalls", false, "echo: count system calls per message with strace -c -f (a separate short run per server)")
	flag.StringVar(&o.results, "results", "RESULTS.md", "where a full run writes its report (charts go to charts/ beside it); empty: do not write")
	flag.StringVar(&o.lib, "lib", "..", "the unipoll checkout whose examples/echo is measured")
	flag.StringVar(&o.pin, "pin", "auto", "echo: auto (pinned, and unpinned where a target asks), on, off")
	flag.StringVar(&o.servers, "servers", "", "echo: only these servers, comma-separated (unipoll always runs)")
	flag.StringVar(&o.conns, "conns", "", "echo: only these connection counts, comma-separated")
	flag.StringVar(&o.sizes, "sizes", "", "echo: only these message sizes in bytes, comma-separated")
	flag.StringVar(&o.parts, "parts", "", "tls: only these parts, comma-separated (echo, idle, flood, handshakes, resp)")
	flag.Func("variant", "also measure unipoll with extra environment, as NAME:K=V[,K=V] (repeatable), e.g. poll:UNIPOLL_BACKEND=poll", func(v string) error {
		name, env, ok := strings.Cut(v, ":")
		if !ok || name == "" || !strings.Contains(env, "=") {
			return fmt.Errorf("want NAME:K=V[,K=V], got %q", v)
		}
		o.variants = append(o.variants, variant{name: "unipoll[" + name + "]", env: strings.Split(env, ",")})
		return nil
	})
	flag.Func("echo-lib", "echo: also measure the examples/echo of another unipoll checkout, as NAME=DIR (repeatable), e.g. main=/path/to/main", func(v string) error {
		name, dir, ok := strings.Cut(v, "=")
		if !ok || name == "" || dir == "" {
			return fmt.Errorf("want NAME=DIR, got %q", v)
		}
		o.variants = append(o.variants, variant{name: "unipoll[" + name + "]", lib: dir})
		return nil
	})
	flag.StringVar(&o.role, "role", "", "internal: server, load or micro (the runner starts these)")
	flag.Parse()

	if o.role != "" {
		if err := runRole(o.role, flag.Args()); err != nil {
			fmt.Fprintf(os.Stderr, "bench -role %s: %v\n", o.role, err)
			os.Exit(1)
		}
		return
	}
	if o.list {
		for _, s := range scenarios {
			status := ""
			if s.Pending != "" {
				status = " (not built yet: " + s.Pending + ")"
			}
			fmt.Printf("%-10s %s%s\n", s.Name, s.Title, status)
		}
		return
	}
	start := time.Now()
	if err := run(o); err != nil {
		fmt.Fprintf(os.Stderr, "bench: %v\n", err)
		os.Exit(1)
	}
	fmt.Fprintf(os.Stderr, "bench: done in %v\n", time.Since(start).Round(time.Second))
}
