//go:build linux

package child

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"slices"
	"syscall"
	"testing"
	"time"

	"github.com/unipoll/unipoll/poll"
)

// Measurements of the ways of learning of an exit, side by side in one run
// with the baseline a Go program uses without unipoll: a goroutine blocked
// in cmd.Wait(). The figures that matter are reported as metrics (b.N
// rounds each):
//
//	go test ./child -run '^$' -bench . -benchtime 200x -count 5

// BenchmarkExitLatency: from kill(SIGKILL) of a sleeping child to the
// moment the waiter learns of it: the Poll call returning its event (pidfd,
// sigchld) or cmd.Wait() returning in a goroutine (wait). Each round kills
// one child per way, in turn, so that the three see the same machine, and
// each child is asleep in sleep(1) when it is killed.
func BenchmarkExitLatency(b *testing.B) {
	b.ReportAllocs()
	p, err := poll.New()
	if err != nil {
		b.Fatal(err)
	}
	defer p.Close()
	ev := poll.NewEvents(4)
	var lat [3][]time.Duration
	names := [3]string{"pidfd", "sigchld", "wait"}
	for range b.N {
		for k := range 3 {
			cmd := exec.Command("/bin/sleep", "100")
			if err := cmd.Start(); err != nil {
				b.Fatal(err)
			}
			pid := cmd.Process.Pid
			asleep(b, pid)
			if k == 2 {
				done := make(chan time.Time, 1)
				go func() { _ = cmd.Wait(); done <- time.Now() }()
				t0 := time.Now()
				_ = syscall.Kill(pid, syscall.SIGKILL)
				lat[k] = append(lat[k], (<-done).Sub(t0))
				continue
			}
			var opts []Option
			if k == 1 {
				opts = append(opts, UseSIGCHLD())
			}
			w, err := WatchCmd(cmd, opts...)
			if err != nil {
				b.Fatal(err)
			}
			if err := p.Register(w, 1, poll.Readable, poll.Edge); err != nil {
				b.Fatal(err)
			}
			t0 := time.Now()
			_ = syscall.Kill(pid, syscall.SIGKILL)
			if n, err := p.Poll(ev, 10*time.Second); err != nil || n != 1 {
				b.Fatalf("%s: Poll = %d, %v", names[k], n, err)
			}
			lat[k] = append(lat[k], time.Since(t0))
			_ = w.Close()
			_ = cmd.Wait()
		}
	}
	for k, l := range lat {
		slices.Sort(l)
		b.ReportMetric(float64(l[len(l)/2].Microseconds()), names[k]+"-p50-µs")
		b.ReportMetric(float64(l[len(l)*99/100].Microseconds()), names[k]+"-p99-µs")
	}
}

// asleep waits until pid has exec'd sleep and sleeps in it, so that every
// way kills a process in the same state.
func asleep(b *testing.B, pid int) {
	deadline := time.Now().Add(10 * time.Second)
	for {
		st, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
		if err == nil && bytes.Contains(st, []byte("(sleep) S")) {
			return
		}
		if time.Now().After(deadline) {
			b.Fatalf("pid %d never slept: %s", pid, st)
		}
		runtime.Gosched()
	}
}

// BenchmarkThousandExits: 1,000 children blocked reading one pipe exit
// together when it is closed; the time until the last exit is reported
// (ms-all), per way: Edge events from one Poll (pidfd, sigchld), or 1,000
// goroutines blocked in cmd.Wait() (wait). Starting the children is not
// timed.
func BenchmarkThousandExits(b *testing.B) {
	for _, way := range []string{"pidfd", "sigchld", "wait"} {
		b.Run(way, func(b *testing.B) {
			b.ReportAllocs()
			var total time.Duration
			var nscans uint64
			for range b.N {
				b.StopTimer()
				r, wr, err := os.Pipe()
				if err != nil {
					b.Fatal(err)
				}
				cmds := make([]*exec.Cmd, manyChildren)
				for i := range cmds {
					cmds[i] = exec.Command("/bin/sh", "-c", "read x")
					cmds[i].Stdin = r
					if err := cmds[i].Start(); err != nil {
						b.Fatal(err)
					}
				}
				_ = r.Close()
				before := ReadStats().Scans
				elapsed := thousandExits(b, way, cmds, wr)
				total += elapsed
				nscans += ReadStats().Scans - before
				b.StartTimer()
			}
			b.ReportMetric(float64(total.Milliseconds())/float64(b.N), "ms-all")
			b.ReportMetric(float64(nscans)/float64(b.N), "scans")
		})
	}
}

func thousandExits(b *testing.B, way string, cmds []*exec.Cmd, wr *os.File) time.Duration {
	if way == "wait" {
		done := make(chan struct{}, len(cmds))
		ready := make(chan struct{}, len(cmds))
		for _, c := range cmds {
			go func() { ready <- struct{}{}; _ = c.Wait(); done <- struct{}{} }()
		}
		for range cmds {
			<-ready
		}
		t0 := time.Now()
		_ = wr.Close()
		for range cmds {
			<-done
		}
		return time.Since(t0)
	}
	p, err := poll.New()
	if err != nil {
		b.Fatal(err)
	}
	defer p.Close()
	var opts []Option
	if way == "sigchld" {
		opts = append(opts, UseSIGCHLD())
	}
	ws := make([]*Watcher, len(cmds))
	for i, c := range cmds {
		if ws[i], err = WatchCmd(c, opts...); err != nil {
			b.Fatal(err)
		}
		if err := p.Register(ws[i], poll.Token(i+1), poll.Readable, poll.Edge); err != nil {
			b.Fatal(err)
		}
	}
	ev := poll.NewEvents(256)
	t0 := time.Now()
	_ = wr.Close()
	for seen := 0; seen < len(cmds); {
		n, err := p.Poll(ev, 30*time.Second)
		if err != nil || n == 0 {
			b.Fatalf("Poll = %d, %v after %d exits", n, err, seen)
		}
		seen += n
	}
	elapsed := time.Since(t0)
	for i, c := range cmds {
		_ = ws[i].Close()
		_ = c.Wait()
	}
	return elapsed
}

// BenchmarkScan: the cost of one SIGCHLD on the fallback path with 1,000
// live watched children: one scan of the table, a waitid(P_PID, WNOWAIT)
// per pid (ns/op is per scan; ns-per-pid divides it).
func BenchmarkScan(b *testing.B) {
	for _, n := range []int{10, 100, 1000} {
		b.Run(fmt.Sprint(n), func(b *testing.B) {
			b.ReportAllocs()
			cmds := make([]*exec.Cmd, n)
			ws := make([]*Watcher, n)
			for i := range cmds {
				cmds[i] = exec.Command("/bin/sleep", "100")
				if err := cmds[i].Start(); err != nil {
					b.Fatal(err)
				}
				var err error
				if ws[i], err = WatchCmd(cmds[i], UseSIGCHLD()); err != nil {
					b.Fatal(err)
				}
			}
			defer func() {
				for i, c := range cmds {
					_ = ws[i].Close()
					_ = c.Process.Kill()
					_ = c.Wait()
				}
			}()
			b.ResetTimer()
			for range b.N {
				scan()
			}
			b.StopTimer()
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(n), "ns-per-pid")
		})
	}
}

// BenchmarkStaggeredExits: the fallback's worst case, 1,000 live children
// that exit one at a time, each reported before the next is killed, so
// that every SIGCHLD scans a table of up to 1,000 pids (the trap in which
// polling every pid on every SIGCHLD went from 1.9s to 49s elsewhere).
// ms-all is the time to kill and report all of them, one by one.
func BenchmarkStaggeredExits(b *testing.B) {
	for _, way := range []string{"pidfd", "sigchld"} {
		b.Run(way, func(b *testing.B) {
			b.ReportAllocs()
			var total time.Duration
			var nscans uint64
			var opts []Option
			if way == "sigchld" {
				opts = append(opts, UseSIGCHLD())
			}
			for range b.N {
				b.StopTimer()
				p, err := poll.New()
				if err != nil {
					b.Fatal(err)
				}
				cmds := make([]*exec.Cmd, manyChildren)
				ws := make([]*Watcher, manyChildren)
				for i := range cmds {
					cmds[i] = exec.Command("/bin/sleep", "100")
					if err := cmds[i].Start(); err != nil {
						b.Fatal(err)
					}
					if ws[i], err = WatchCmd(cmds[i], opts...); err != nil {
						b.Fatal(err)
					}
					if err := p.Register(ws[i], poll.Token(i+1), poll.Readable, poll.Edge); err != nil {
						b.Fatal(err)
					}
				}
				ev := poll.NewEvents(4)
				before := ReadStats().Scans
				b.StartTimer()
				t0 := time.Now()
				for i, c := range cmds {
					_ = syscall.Kill(c.Process.Pid, syscall.SIGKILL)
					if n, err := p.Poll(ev, 10*time.Second); err != nil || n != 1 || ev.At(0).Token != poll.Token(i+1) {
						b.Fatalf("child %d: Poll = %d, %v", i, n, err)
					}
				}
				total += time.Since(t0)
				b.StopTimer()
				nscans += ReadStats().Scans - before
				for i, c := range cmds {
					_ = ws[i].Close()
					_ = c.Wait()
				}
				_ = p.Close()
				b.StartTimer()
			}
			b.ReportMetric(float64(total.Milliseconds())/float64(b.N), "ms-all")
			b.ReportMetric(float64(nscans)/float64(b.N), "scans")
		})
	}
}
