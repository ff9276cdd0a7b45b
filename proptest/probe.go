//go:build linux

package proptest

import (
	"bytes"
	"fmt"
	"os"
	"runtime"
	"strconv"
	"sync/atomic"
	"time"

	"golang.org/x/sys/unix"
)

// A thread probe tells whether a poller, a goroutine locked to its OS
// thread (runtime.LockOSThread) that calls Poll, is asleep in the kernel
// inside a selector's wait (epoll_wait, ppoll and their variants,
// io_uring_enter). It reads /proc/self/task/<tid>/syscall, which names the
// system call a sleeping thread is in and says "running" for a thread that
// runs or is runnable.
// A thread that has been woken (a waker write, a kernel event, its
// timeout) is runnable from that moment, whether or not it has a processor
// yet, so it is never seen asleep again in the same wait.
//
// That turns a lost wake-up into something seen in a tenth of a second: a
// poller that owes an event and is seen asleep in the selector, sample
// after sample, for stallFast was not woken, however loaded the machine.
// Without the probe only a long bound (wakeBound) could tell a lost
// wake-up from a slow scheduler, and a failing case would wait that long at
// every shrinking step.

// stallFast is how long a poller that owes an event may be seen asleep in
// the selector, without a break, before the property declares a lost
// wake-up. A woken thread is runnable at once, so this is not a latency
// bound; it only has to be far longer than the sampling period.
const stallFast = 100 * time.Millisecond

// wakeBound is the latency bound for a wake-up that the probe cannot judge
// (the poller was not seen asleep, or the probe does not know this
// architecture's wait calls): on a loaded 2-core machine under -race a
// wake-up takes well under a millisecond, and the Polls it must end wait
// forever or for seconds.
const wakeBound = time.Second

// waitSyscalls are the system calls a selector sleeps in; the legacy ones
// (poll, epoll_wait) are added where the architecture has them. The uring
// backend also submits through io_uring_enter, but a submission never
// sleeps, so a thread asleep in io_uring_enter is waiting for completions.
var waitSyscalls = map[int64]bool{
	unix.SYS_PPOLL:          true,
	unix.SYS_EPOLL_PWAIT:    true,
	unix.SYS_EPOLL_PWAIT2:   true,
	unix.SYS_IO_URING_ENTER: true,
}

type threadProbe struct{ path string }

// probeThisThread returns a probe of the calling goroutine's thread; the
// caller must have locked the goroutine to it.
func probeThisThread() *threadProbe {
	return &threadProbe{path: fmt.Sprintf("/proc/self/task/%d/syscall", unix.Gettid())}
}

// asleep reports whether the thread is asleep in a selector wait now.
func (p *threadProbe) asleep() bool {
	if p == nil {
		return false
	}
	b, err := os.ReadFile(p.path)
	if err != nil {
		return false
	}
	f := bytes.Fields(b)
	if len(f) == 0 {
		return false
	}
	nr, err := strconv.ParseInt(string(f[0]), 10, 64)
	return err == nil && waitSyscalls[nr]
}

// probePeriod is the sampling period of the probe.
const probePeriod = 500 * time.Microsecond

// waitAsleep waits until the thread is asleep in a selector wait, for at
// most d, and gives up early when stop is set (the Poll returned). It
// reports whether the thread was seen asleep.
func (p *threadProbe) waitAsleep(d time.Duration, stop *atomic.Bool) bool {
	if p == nil {
		return false
	}
	deadline := time.Now().Add(d)
	for {
		if p.asleep() {
			return true
		}
		if (stop != nil && stop.Load()) || time.Now().After(deadline) {
			return false
		}
		pace(probePeriod)
	}
}

// awaitWake waits for done to deliver (an acknowledgement, a goroutine's
// end) while the poller owes it from the time from on. It returns "" when
// done delivers, else why it gave up: the poller was seen asleep in the
// selector for stallFast without a break after from (a lost wake-up), or
// bound passed. The reasons are fixed strings, so that rapid sees the
// same failure at every shrinking step.
func awaitWake(done <-chan struct{}, probe *threadProbe, from time.Time, bound time.Duration) string {
	return awaitWakeOr(done, nil, probe, from, bound)
}

// aborted is what awaitWakeOr returns when abort was closed first.
const aborted = "aborted"

// awaitWakeOr is awaitWake that also gives up, returning aborted, as soon
// as abort is closed (another goroutine failed and closed the Poll).
func awaitWakeOr(done, abort <-chan struct{}, probe *threadProbe, from time.Time, bound time.Duration) string {
	deadline := time.Now().Add(bound)
	if d := from.Add(bound); d.After(deadline) {
		deadline = d
	}
	var asleepSince time.Time
	tick := time.NewTicker(probePeriod)
	defer tick.Stop()
	for {
		select {
		case <-done:
			return ""
		case <-abort:
			return aborted
		case <-tick.C:
		}
		now := time.Now()
		if !now.Before(from) && probe.asleep() {
			// An acknowledgement sent just before the poller went back to
			// sleep is in done by now: the poller sends before it polls.
			select {
			case <-done:
				return ""
			default:
			}
			if asleepSince.IsZero() {
				asleepSince = now
			}
			if now.Sub(asleepSince) >= stallFast {
				return fmt.Sprintf("the poller's thread stayed asleep in the selector for %v, so nothing woke it", stallFast)
			}
		} else {
			asleepSince = time.Time{}
		}
		if now.After(deadline) {
			return fmt.Sprintf("it did not happen within %v", bound)
		}
	}
}

// startConsumer runs consume on a goroutine of its own, locked to its
// thread so that a threadProbe can watch that thread. It returns a channel
// that yields the probe once the goroutine runs, and one closed when
// consume returns.
func startConsumer(consume func()) (probe <-chan *threadProbe, done <-chan struct{}) {
	probeCh := make(chan *threadProbe, 1)
	doneCh := make(chan struct{})
	go func() {
		defer close(doneCh)
		runtime.LockOSThread()
		defer runtime.UnlockOSThread()
		probeCh <- probeThisThread()
		consume()
	}()
	return probeCh, doneCh
}

// pace blocks the calling goroutine for about d. It is for pacing a
// sampling loop, never for ordering two events.
func pace(d time.Duration) { <-time.After(d) }
