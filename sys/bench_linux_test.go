package sys_test

// The Linux baseline of bench_test.go: an eventfd and epoll, nothing else.

import (
	"testing"

	"golang.org/x/sys/unix"
)

func init() {
	benchWakeBaselines = append(benchWakeBaselines, benchWakeBaseline{
		name: "raw-eventfd",
		open: func(b *testing.B) benchWakeEnd { return newRawEventfdEnd(b) },
	})
}

// rawEventfdEnd is the floor: an eventfd registered edge-triggered with its
// own epoll instance, as the epoll selector registers its waker. A wake-up
// is one write(2), a wait one epoll_wait(2); nothing else.
type rawEventfdEnd struct {
	efd, epfd int
	evs       []unix.EpollEvent
}

func newRawEventfdEnd(b *testing.B) *rawEventfdEnd {
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
	ev := unix.EpollEvent{Events: unix.EPOLLIN | unix.EPOLLET, Fd: int32(efd)}
	if err := unix.EpollCtl(epfd, unix.EPOLL_CTL_ADD, efd, &ev); err != nil {
		b.Fatal(err)
	}
	return &rawEventfdEnd{efd: efd, epfd: epfd, evs: make([]unix.EpollEvent, 1)}
}

func (r *rawEventfdEnd) wake() error {
	one := [8]byte{1} // little endian: amd64, arm64, riscv64, ...
	for {
		_, err := unix.Write(r.efd, one[:])
		if err != unix.EINTR {
			return err
		}
	}
}

func (r *rawEventfdEnd) waitFor(ms int) (bool, error) {
	for {
		n, err := unix.EpollWait(r.epfd, r.evs, ms)
		if err == unix.EINTR {
			continue
		}
		return n > 0, err
	}
}

func (r *rawEventfdEnd) wait() error {
	for {
		ok, err := r.waitFor(-1)
		if err != nil || ok {
			return err
		}
	}
}

func (r *rawEventfdEnd) poll() (bool, error) { return r.waitFor(0) }
