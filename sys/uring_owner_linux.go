//go:build linux

package sys

import (
	"runtime"

	"golang.org/x/sys/unix"
)

// uringOwner: the thread that creates a ring, kept so that Close can tell
// when the kernel is done interrupting the process's threads.
//
// io_uring runs a request's completion work on the thread that submitted
// it, and when a ring is closed the kernel's teardown (a kernel worker,
// after Close has returned) interrupts every thread that created or
// submitted to the ring, once each, as a signal without a handler would.
// Go threads are shared by every goroutine, so such an interrupt lands in
// whatever another goroutine is doing: an epoll_wait (of an epoll
// selector, of the Go runtime's netpoller) returns EINTR. EINTR is retried
// everywhere, so nothing breaks, but a wait is spent, and it happens after
// Close returned, in code that never used io_uring.
//
// So a ring is created on a thread of its own, locked to a goroutine that
// stays until Close. The kernel interrupts the ring's threads newest first
// (it adds each thread at the head of the ring's list, io_uring/tctx.c), so
// the creator comes last. At Close the owner waits in an epoll_wait on an
// empty epoll instance, which an interrupt ends with EINTR, and Close
// returns when it has: every other thread has had its interrupt by then.
// The wait is bounded (uringOwnerWait): a real signal may end it early, or
// an owner slow to enter its epoll_wait may miss its interrupt; then Close
// is only as quiet as it would have been without the owner.
//
// The wait is most of Close's time: about 20 ms on Linux 6.18 (through
// package poll, closed on the polling goroutine or another one), against
// a few microseconds for the other backends. Requests armed only to be
// cancelled make it about 50 ms, which is why cancelAllLocked leaves a
// ring that never submitted anything as it is.
type uringOwner struct {
	arm   chan struct{} // closed by Close: start waiting for the interrupt
	armed chan struct{} // closed by the owner just before it waits
	done  chan struct{} // closed by the owner when the wait is over
}

// uringOwnerWait bounds the owner's wait for its interrupt, in ms.
const uringOwnerWait = 100

// setupOwnedUring opens a ring (setupUring) on a new owner thread.
func setupOwnedUring(sq, cq uint32) (*uringRing, *uringOwner, error) {
	o := &uringOwner{arm: make(chan struct{}), armed: make(chan struct{}), done: make(chan struct{})}
	type result struct {
		r   *uringRing
		err error
	}
	res := make(chan result)
	go func() {
		runtime.LockOSThread()
		defer runtime.UnlockOSThread()
		r, err := setupUring(sq, cq)
		res <- result{r, err}
		if err != nil {
			return
		}
		<-o.arm
		o.awaitInterrupt()
		close(o.done)
	}()
	got := <-res
	if got.err != nil {
		return nil, nil, got.err
	}
	return got.r, o, nil
}

func (o *uringOwner) awaitInterrupt() {
	epfd, err := unix.EpollCreate1(unix.EPOLL_CLOEXEC)
	close(o.armed)
	if err != nil {
		return
	}
	var ev [1]unix.EpollEvent
	_, _ = unix.EpollWait(epfd, ev[:], uringOwnerWait) // EINTR: interrupted
	unix.Close(epfd)
}

// closeRing closes r while the owner waits, and returns once the owner was
// interrupted (or its wait ran out).
func (o *uringOwner) closeRing(r *uringRing) error {
	close(o.arm)
	<-o.armed
	err := r.close()
	<-o.done
	return err
}
