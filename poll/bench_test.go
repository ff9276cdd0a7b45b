package poll

// Benchmarks of the poll package, with the baselines that need no
// third-party code (a Go channel, a raw eventfd with epoll_wait in
// bench_linux_test.go) run side by side in the same `go test -bench` so that
// one run compares them. See bench/README.md at the module root for how to
// run and read them. This file holds their helpers; the benchmarks are in
// bench_calls_test.go (what one call costs), bench_notify_test.go
// (notification throughput) and bench_wake_test.go (waking a Poll).
//
// They live in package poll (not poll_test) only so that the sleep-sensitive
// benchmarks can see the readiness queue's sleep word (p.queue.sleep), the
// one reliable sign that a goroutine in Poll has committed to blocking.
// Every helper is prefixed with "bench" to stay clear of the helpers of the
// package's tests.
//
// No benchmark asserts a time: the targets are in the report, not in code.

import (
	"sync/atomic"
	"testing"

	"golang.org/x/sys/cpu"
	"golang.org/x/sys/unix"

	"github.com/unipoll/unipoll/sys"
)

// benchPoll opens a Poll on backend, closed when the benchmark ends.
func benchPoll(b *testing.B, backend string) *Poll {
	b.Helper()
	p, err := NewWithConfig(Config{Backend: backend})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = p.Close() })
	return p
}

// benchSocketpairs opens n non-blocking unix socketpairs, closed when the
// benchmark ends. Open them before the Poll, so that (cleanups run last in,
// first out) the Poll is closed first.
func benchSocketpairs(b *testing.B, n int) [][2]int {
	b.Helper()
	out := make([][2]int, 0, n)
	b.Cleanup(func() {
		for _, p := range out {
			_ = unix.Close(p[0])
			_ = unix.Close(p[1])
		}
	})
	for range n {
		fds, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_STREAM, 0)
		if err != nil {
			b.Fatalf("socketpair #%d: %v", len(out), err)
		}
		out = append(out, [2]int(fds))
		for _, fd := range fds {
			if err := unix.SetNonblock(fd, true); err != nil {
				b.Fatal(err)
			}
		}
	}
	return out
}

// benchRegistrations registers n Registrations for Readable in mode opts,
// with tokens 0..n-1, and returns their SetReadiness.
func benchRegistrations(b *testing.B, p *Poll, n int, opts PollOpt) []*SetReadiness {
	b.Helper()
	sets := make([]*SetReadiness, n)
	for i := range sets {
		r, s := NewRegistration()
		b.Cleanup(func() { _ = r.Close() })
		if err := p.Register(r, Token(i), Readable, opts); err != nil {
			b.Fatal(err)
		}
		sets[i] = s
	}
	return sets
}

// benchNofile makes sure the process may open `need` more descriptors:
// it raises the soft RLIMIT_NOFILE up to the hard limit (Go already does this
// at start-up, but an embedding test runner may not have), and then the hard
// limit if the process is privileged. It skips the benchmark, saying why,
// when neither is enough.
func benchNofile(b *testing.B, need uint64) {
	b.Helper()
	const margin = 256 // the test binary's own descriptors, the Poll's, stdio
	need += margin
	var rl unix.Rlimit
	if err := unix.Getrlimit(unix.RLIMIT_NOFILE, &rl); err != nil {
		b.Skipf("getrlimit(RLIMIT_NOFILE): %v", err)
	}
	cur, hard := uint64(rl.Cur), uint64(rl.Max)
	if cur >= need {
		return
	}
	if hard >= need {
		rl.Cur = rl.Max
		if err := unix.Setrlimit(unix.RLIMIT_NOFILE, &rl); err != nil {
			b.Skipf("needs %d descriptors; raising the soft RLIMIT_NOFILE to the hard limit %d failed: %v", need, hard, err)
		}
		return
	}
	benchSetLimit(&rl.Cur, &rl.Max, need)
	if err := unix.Setrlimit(unix.RLIMIT_NOFILE, &rl); err != nil {
		b.Skipf("needs %d descriptors but RLIMIT_NOFILE is %d (hard %d) and cannot be raised: %v", need, cur, hard, err)
	}
}

// benchSetLimit sets both limits of an Rlimit, whose fields are uint64 on
// some systems and int64 on others.
func benchSetLimit[T int64 | uint64](cur, hard *T, v uint64) { *cur, *hard = T(v), T(v) }

// benchPadded keeps a counter on its own cache line.
type benchPadded struct {
	v atomic.Uint64
	_ cpu.CacheLinePad
}

// benchBaseline is a system-call baseline that this OS has:
// bench_linux_test.go registers the eventfd ones.
type benchBaseline struct {
	name string
	run  func(b *testing.B)
}

var (
	benchNotifyBaselines  []benchBaseline // BenchmarkNotifyThroughput
	benchLatencyBaselines []benchBaseline // BenchmarkWakeLatency
)

// benchUnipollName names the unipoll variant of a comparison: "unipoll" on
// the default (best) backend, "unipoll-<backend>" on the others.
func benchUnipollName(backend string) string {
	if backend == sys.Backends()[0] {
		return "unipoll"
	}
	return "unipoll-" + backend
}
