package testsupport

import (
	"encoding/binary"
	"testing"

	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"
)

// RawEventfd is the system-call baseline of the wake-up and notification
// benchmarks: an eventfd watched by an epoll instance of its own, with
// nothing of unipoll in between. Registered edge-triggered it needs no read
// (every write is a new edge), which is how the epoll selector's own waker
// works; level-triggered, it is read (Take) to learn the count.
type RawEventfd struct {
	efd, epfd int
	evs       []unix.EpollEvent
}

// NewRawEventfd opens a non-blocking eventfd and an epoll instance that
// watches it for reading, edge-triggered if edge, and closes both at tb's
// cleanup.
func NewRawEventfd(tb testing.TB, edge bool) *RawEventfd {
	tb.Helper()
	efd, err := unix.Eventfd(0, unix.EFD_CLOEXEC|unix.EFD_NONBLOCK)
	require.NoError(tb, err, "eventfd")
	epfd, err := unix.EpollCreate1(unix.EPOLL_CLOEXEC)
	if err != nil {
		_ = unix.Close(efd)
		require.NoError(tb, err, "epoll_create1")
	}
	tb.Cleanup(func() {
		_ = unix.Close(efd)
		_ = unix.Close(epfd)
	})
	ev := unix.EpollEvent{Events: unix.EPOLLIN, Fd: int32(efd)}
	if edge {
		ev.Events |= unix.EPOLLET
	}
	require.NoError(tb, unix.EpollCtl(epfd, unix.EPOLL_CTL_ADD, efd, &ev), "epoll_ctl")
	return &RawEventfd{efd: efd, epfd: epfd, evs: make([]unix.EpollEvent, 1)}
}

// Add adds v to the counter: one write(2).
func (r *RawEventfd) Add(v uint64) error {
	var buf [8]byte
	binary.NativeEndian.PutUint64(buf[:], v)
	for {
		_, err := unix.Write(r.efd, buf[:])
		if err != unix.EINTR {
			return err
		}
	}
}

// Wait blocks in epoll_wait until the eventfd is reported: one
// epoll_wait(2), more only on EINTR.
func (r *RawEventfd) Wait() error {
	for {
		ok, err := r.wait(-1)
		if err != nil || ok {
			return err
		}
	}
}

// Poll reports, without blocking, whether the eventfd is reported: one
// epoll_wait(2) with a zero timeout.
func (r *RawEventfd) Poll() (bool, error) { return r.wait(0) }

func (r *RawEventfd) wait(ms int) (bool, error) {
	for {
		n, err := unix.EpollWait(r.epfd, r.evs, ms)
		if err == unix.EINTR {
			continue
		}
		return n > 0, err
	}
}

// Take reads and resets the counter (one read(2)); 0 if it was 0.
func (r *RawEventfd) Take() (uint64, error) {
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

// NotifyEventfd is the eventfd baseline of the notification-throughput
// benchmarks (poll's BenchmarkNotifyThroughput, scenario 1 of bench/): one
// eventfd write(2) per notification, the consumer blocked in epoll_wait(2)
// on the level-triggered eventfd and reading the counter, which tells it
// how many notifications it got (the kernel coalesces them); a Credit of
// window is the flow control. It reports cpu-ns/op, sets/op (writes per
// notification, 1) and events/op (epoll_wait returns per notification).
func NotifyEventfd(b *testing.B, window uint64) {
	r := NewRawEventfd(b, false)
	credit := NewCredit(window)
	total := uint64(b.N)
	type consumed struct {
		events uint64
		err    error
	}
	done := make(chan consumed, 1)
	go func() {
		var got, events uint64
		for got < total {
			if err := r.Wait(); err != nil {
				done <- consumed{err: err}
				return
			}
			events++
			v, err := r.Take()
			if err != nil {
				done <- consumed{err: err}
				return
			}
			got += v
			credit.Publish(got)
		}
		done <- consumed{events: events}
	}()
	cpu := StartBench(b)
	for i := range total {
		credit.Take(i)
		if err := r.Add(1); err != nil {
			b.Fatal(err)
		}
	}
	res := <-done
	b.StopTimer()
	cpu()
	if res.err != nil {
		b.Fatal(res.err)
	}
	b.ReportMetric(1, "sets/op")
	b.ReportMetric(float64(res.events)/float64(b.N), "events/op")
}
