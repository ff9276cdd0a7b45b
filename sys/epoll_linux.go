//go:build linux

package sys

import (
	"errors"
	"os"
	"runtime"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

func init() {
	backends[BackendEpoll] = openEpoll
}

const defaultBackend = BackendEpoll

// wakerKey is the epoll data of the eventfd waker; Add and Modify refuse it
// to callers (ReservedKey).
const wakerKey = ReservedKey

// hasPwait2 caches whether epoll_pwait2 (Linux 5.11) is available: 1 yes,
// 2 no, 0 not probed yet. With it timeouts keep nanosecond precision;
// without it they are rounded up to milliseconds.
var hasPwait2 atomic.Uint32

// epollSelector: mu guards the descriptor numbers against Close. Wake and
// the registration calls hold it for reading while they use epfd or the
// eventfd and check closed, and Close sets closed holding it for writing,
// so no system call can reach a number that Close released and the process
// reused. Select does not take it: the caller guarantees Close never runs
// during Select, so a look at closed suffices there.
//
// How Select waits is mode (epoll_wait_linux.go). In WaitPark mode file
// owns epfd (Close closes it through file, which also takes it out of the
// runtime's netpoller), raw reaches it from the netpoller's read loop, and
// deadline is the read deadline last set on file (Select only; zero: none).
type epollSelector struct {
	epfd     int
	waker    *eventfdWaker // registered edge-triggered, so it is never drained
	gate     wakeGate
	waits    atomic.Uint64
	buf      []unix.EpollEvent
	mode     string
	file     *os.File
	raw      syscall.RawConn
	deadline time.Time
	mu       sync.RWMutex
	closed   atomic.Bool // set under mu held for writing
}

func openEpoll(o Options) (Selector, error) {
	epfd, err := unix.EpollCreate1(unix.EPOLL_CLOEXEC)
	if err != nil {
		return nil, os.NewSyscallError("epoll_create1", err)
	}
	w, err := newEventfdWaker()
	if err != nil {
		unix.Close(epfd)
		return nil, err
	}
	s := &epollSelector{epfd: epfd, waker: w, mode: o.Wait}
	ev := unix.EpollEvent{Events: unix.EPOLLIN | unix.EPOLLET}
	setEpollKey(&ev, wakerKey)
	if err := unix.EpollCtl(epfd, unix.EPOLL_CTL_ADD, w.fd(), &ev); err != nil {
		_ = w.close()
		unix.Close(epfd)
		return nil, os.NewSyscallError("epoll_ctl", err)
	}
	if s.mode == WaitPark && !s.openPark() {
		s.mode = WaitLook
	}
	return s, nil
}

func (s *epollSelector) Name() string { return BackendEpoll }

// setEpollKey stores a 64-bit key in epoll_data. x/sys splits the union into
// two int32 fields (Fd, Pad) on every architecture; together they are the
// kernel's 64-bit epoll_data.
func setEpollKey(ev *unix.EpollEvent, key uint64) {
	ev.Fd = int32(uint32(key))
	ev.Pad = int32(uint32(key >> 32))
}

func epollKey(ev *unix.EpollEvent) uint64 {
	return uint64(uint32(ev.Fd)) | uint64(uint32(ev.Pad))<<32
}

func epollFlags(interest uint32, mode Mode) uint32 {
	var f uint32
	if interest&Readable != 0 {
		f |= unix.EPOLLIN
	}
	if interest&(Readable|Hup) != 0 {
		f |= unix.EPOLLRDHUP // a peer's half-close is a hang-up to report
	}
	if interest&Writable != 0 {
		f |= unix.EPOLLOUT
	}
	if interest&Priority != 0 {
		f |= unix.EPOLLPRI
	}
	if mode&Edge != 0 {
		f |= unix.EPOLLET
	}
	if mode&Oneshot != 0 {
		f |= unix.EPOLLONESHOT
	}
	return f
}

func epollReady(events uint32) uint32 {
	var r uint32
	if events&unix.EPOLLIN != 0 {
		r |= Readable
	}
	if events&unix.EPOLLOUT != 0 {
		r |= Writable
	}
	if events&unix.EPOLLERR != 0 {
		r |= Error
	}
	if events&(unix.EPOLLHUP|unix.EPOLLRDHUP) != 0 {
		r |= Hup
	}
	if events&unix.EPOLLPRI != 0 {
		r |= Priority
	}
	return r
}

// ctl makes one epoll_ctl call. The kernel's own answers already are the
// contract's (EEXIST, ENOENT, EBADF, EPERM).
func (s *epollSelector) ctl(name string, op, fd int, key uint64, interest uint32, mode Mode) error {
	ev := unix.EpollEvent{Events: epollFlags(interest, mode)}
	setEpollKey(&ev, key)
	s.mu.RLock()
	defer s.mu.RUnlock()
	if s.closed.Load() {
		return ErrClosed
	}
	if err := ignoringEINTR(func() error { return unix.EpollCtl(s.epfd, op, fd, &ev) }); err != nil {
		return os.NewSyscallError(name, err)
	}
	return nil
}

func (s *epollSelector) Add(fd int, key uint64, interest uint32, mode Mode) error {
	if err := checkKey(key); err != nil {
		return os.NewSyscallError("epoll_ctl(ADD)", err)
	}
	return s.ctl("epoll_ctl(ADD)", unix.EPOLL_CTL_ADD, fd, key, interest, mode)
}

func (s *epollSelector) Modify(fd int, key uint64, interest uint32, mode Mode) error {
	if err := checkKey(key); err != nil {
		return os.NewSyscallError("epoll_ctl(MOD)", err)
	}
	return s.ctl("epoll_ctl(MOD)", unix.EPOLL_CTL_MOD, fd, key, interest, mode)
}

func (s *epollSelector) Delete(fd int) error {
	return s.ctl("epoll_ctl(DEL)", unix.EPOLL_CTL_DEL, fd, 0, 0, 0)
}

// Drained does nothing: EPOLLET makes each new arrival an edge by itself.
func (s *epollSelector) Drained(int, uint32) error {
	if s.closed.Load() {
		return ErrClosed
	}
	return nil
}

func (s *epollSelector) Traits() Traits { return Traits{NativeEdge: true} }

func (s *epollSelector) Select(events []Event, timeout time.Duration) (int, bool, error) {
	// Never ask the kernel for more than the caller can take: an edge or
	// oneshot event, once harvested, is gone from the kernel's ready list.
	// When the waker takes one of the slots, the events left over stay on
	// the ready list for the next call.
	if len(events) == 0 {
		return 0, false, ErrEmptyBuffer
	}
	if s.closed.Load() {
		return 0, false, ErrClosed
	}
	if cap(s.buf) < len(events) {
		s.buf = make([]unix.EpollEvent, len(events))
	}
	buf := s.buf[:len(events)]
	dl := newDeadline(timeout)
	for {
		var n int
		var err error
		switch {
		case s.mode == WaitBlock || timeout == 0:
			// A look the caller asked for stays an ordinary system call:
			// a goroutine polling with a zero timeout in a loop goes
			// through the scheduler's system-call path on each call, as
			// it would with any other system call.
			n, err = s.wait(buf, dl.remaining())
		case s.mode == WaitPark:
			n, err = s.park(buf, dl)
		default:
			if n, err = s.look(buf); err == nil && n == 0 {
				// Let the goroutines this thread's processor has queued
				// run before it blocks: while it sleeps in epoll_wait they
				// wait for sysmon to hand the processor on (see
				// epoll_wait_linux.go).
				runtime.Gosched()
				n, err = s.wait(buf, dl.remaining())
			}
		}
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			return 0, false, os.NewSyscallError("epoll_wait", err)
		}
		out, woken := 0, false
		for i := 0; i < n; i++ {
			key := epollKey(&buf[i])
			if key == wakerKey {
				woken = true
				continue
			}
			events[out] = Event{Key: key, Ready: epollReady(buf[i].Events)}
			out++
		}
		if woken {
			s.gate.reset()
		}
		return out, woken, nil
	}
}

func (s *epollSelector) wait(buf []unix.EpollEvent, timeout time.Duration) (int, error) {
	s.waits.Add(1)
	if timeout > 0 && timeout%time.Millisecond != 0 && hasPwait2.Load() != 2 {
		ts := unix.NsecToTimespec(int64(timeout))
		r, _, errno := unix.Syscall6(unix.SYS_EPOLL_PWAIT2, uintptr(s.epfd),
			uintptr(unsafe.Pointer(&buf[0])), uintptr(len(buf)),
			uintptr(unsafe.Pointer(&ts)), 0, 0)
		switch errno {
		case 0:
			hasPwait2.Store(1)
			return int(r), nil
		case unix.ENOSYS, unix.EPERM: // EPERM: seccomp filters that predate it
			hasPwait2.Store(2)
		default:
			return 0, errno
		}
	}
	return unix.EpollWait(s.epfd, buf, millis(timeout))
}

// Wake writes the eventfd. It is registered edge-triggered, so every write
// produces a new event and the counter never needs reading.
func (s *epollSelector) Wake() error {
	if !s.gate.begin() {
		return nil
	}
	return s.gate.write(&s.mu, &s.closed, s.waker.wakeEdge)
}

func (s *epollSelector) Counters() Counters {
	return Counters{WakerWrites: s.gate.writes.Load(), Waits: s.waits.Load()}
}

func (s *epollSelector) Close() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed.Swap(true) {
		return nil
	}
	err := s.waker.close()
	var cerr error
	if s.file != nil {
		cerr = s.file.Close() // closes epfd and takes it out of the netpoller
	} else if cerr = unix.Close(s.epfd); cerr != nil {
		cerr = os.NewSyscallError("close(epoll)", cerr)
	}
	return errors.Join(err, cerr)
}
