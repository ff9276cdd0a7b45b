package poll

// The Linux system-call baselines of bench_test.go: an eventfd watched by
// epoll, with nothing of unipoll in between.

import (
	"encoding/binary"
	"testing"

	"golang.org/x/sys/unix"
)

func init() {
	benchNotifyBaselines = append(benchNotifyBaselines, benchBaseline{"eventfd", benchNotifyEventfd})
	benchLatencyBaselines = append(benchLatencyBaselines, benchBaseline{"eventfd", benchLatencyEventfd})
}

// benchRawEventfd is the syscall baseline: an eventfd watched by its own
// epoll instance. Edge-triggered eventfds need no read (every write is a new
// edge), which is how the epoll selector's own waker works; level-triggered
// ones are read to learn the count.
type benchRawEventfd struct {
	efd, epfd int
	evs       []unix.EpollEvent
}

func benchNewRawEventfd(b *testing.B, edge bool) *benchRawEventfd {
	b.Helper()
	efd, err := unix.Eventfd(0, unix.EFD_CLOEXEC|unix.EFD_NONBLOCK)
	if err != nil {
		b.Fatal(err)
	}
	epfd, err := unix.EpollCreate1(unix.EPOLL_CLOEXEC)
	if err != nil {
		_ = unix.Close(efd)
		b.Fatal(err)
	}
	b.Cleanup(func() {
		_ = unix.Close(efd)
		_ = unix.Close(epfd)
	})
	ev := unix.EpollEvent{Events: unix.EPOLLIN, Fd: int32(efd)}
	if edge {
		ev.Events |= unix.EPOLLET
	}
	if err := unix.EpollCtl(epfd, unix.EPOLL_CTL_ADD, efd, &ev); err != nil {
		b.Fatal(err)
	}
	return &benchRawEventfd{efd: efd, epfd: epfd, evs: make([]unix.EpollEvent, 1)}
}

// add writes v to the eventfd: one write(2).
func (r *benchRawEventfd) add(v uint64) error {
	var buf [8]byte
	binary.NativeEndian.PutUint64(buf[:], v)
	for {
		_, err := unix.Write(r.efd, buf[:])
		if err != unix.EINTR {
			return err
		}
	}
}

// wait blocks in epoll_wait until the eventfd is reported: one epoll_wait(2)
// (more only on EINTR).
func (r *benchRawEventfd) wait() error {
	for {
		n, err := unix.EpollWait(r.epfd, r.evs, -1)
		if err == unix.EINTR || (err == nil && n == 0) {
			continue
		}
		return err
	}
}

// take reads and resets the counter: one read(2).
func (r *benchRawEventfd) take() (uint64, error) {
	var buf [8]byte
	for {
		_, err := unix.Read(r.efd, buf[:])
		switch err {
		case nil:
			return binary.NativeEndian.Uint64(buf[:]), nil
		case unix.EINTR:
			continue
		case unix.EAGAIN:
			return 0, nil
		default:
			return 0, err
		}
	}
}

func benchNotifyEventfd(b *testing.B) {
	r := benchNewRawEventfd(b, false)
	credit := newBenchCredit()
	total := uint64(b.N)
	done := make(chan benchConsumed, 1)
	go func() {
		var got, events uint64
		for got < total {
			if err := r.wait(); err != nil {
				done <- benchConsumed{err: err}
				return
			}
			events++
			v, err := r.take()
			if err != nil {
				done <- benchConsumed{err: err}
				return
			}
			got += v
			credit.publish(got)
		}
		done <- benchConsumed{events: events}
	}()
	var writes, allowed uint64
	b.ReportAllocs()
	b.ResetTimer()
	cpu := benchCPU(b)
	for i := range total {
		if i-allowed >= benchNotifyWindow {
			allowed = credit.await(i)
		}
		if err := r.add(1); err != nil {
			b.Fatal(err)
		}
		writes++
	}
	res := <-done
	b.StopTimer()
	cpu()
	if res.err != nil {
		b.Fatal(res.err)
	}
	n := float64(b.N)
	b.ReportMetric(float64(writes)/n, "sets/op")
	b.ReportMetric(float64(res.events)/n, "events/op")
}

// benchLatencyEventfd is BenchmarkWakeLatency's baseline: a write(2) to an
// edge-triggered eventfd wakes a goroutine blocked in epoll_wait(2).
func benchLatencyEventfd(b *testing.B) {
	r := benchNewRawEventfd(b, true)
	benchLatency(b, benchWaiter{
		wait: r.wait,
		wake: func() error { return r.add(1) },
	})
}
