//go:build linux

package proptest

import (
	"bytes"
	"os"
	"runtime/metrics"
	"strconv"
	"time"

	"golang.org/x/sys/unix"
)

// The scheduling delay a Poll call suffered, measured, so that a lateness
// bound can allow exactly that and nothing more (TestDelayTiming).
//
// A Poll call that waits for a deadline sleeps in the selector until the
// wheel's tick and then runs to its return. Its return is late by what
// the library added (sleeping past the tick: the lateness under test) and
// by what the machine added: the kernel's timer slack (the wake-up may
// come that much after the timeout), the time the woken thread waited for
// a processor (schedstat's run-queue delay), and the time it ran. With the
// goroutine locked to its thread, the kernel counts the last two for the
// thread (/proc/thread-self/schedstat), so
//
//	end - (last sleep's timeout) <= slack + queued + ran
//
// holds for any call whose last sleep was the selector's and which slept
// nowhere else afterwards. What the meter cannot see makes a call
// undecidable rather than late: a voluntary switch that is not a selector
// sleep (the Go runtime parking the thread for a processor, a lock), a
// garbage collection (its pauses), time stolen by the hypervisor, a change
// of thread.

// threadSample is one reading of the meter.
type threadSample struct {
	tid         int
	ran, queued time.Duration // on a CPU; runnable and waiting for one
	sleeps      uint64        // voluntary context switches
	gcs         uint64        // GC cycles of the process
	steal       uint64        // the machine's stolen time, in clock ticks
}

var gcMetric = []metrics.Sample{{Name: "/gc/cycles/total:gc-cycles"}}

// sampleThread reads the meter for the calling thread; ok is false where
// the kernel does not say (no schedstat).
func sampleThread() (s threadSample, ok bool) {
	s.tid = unix.Gettid()
	b, err := os.ReadFile("/proc/thread-self/schedstat")
	if err != nil {
		return s, false
	}
	f := bytes.Fields(b)
	if len(f) < 2 {
		return s, false
	}
	ran, err1 := strconv.ParseInt(string(f[0]), 10, 64)
	queued, err2 := strconv.ParseInt(string(f[1]), 10, 64)
	if err1 != nil || err2 != nil {
		return s, false
	}
	s.ran, s.queued = time.Duration(ran), time.Duration(queued)
	b, err = os.ReadFile("/proc/thread-self/status")
	if err != nil {
		return s, false
	}
	if s.sleeps, ok = statusField(b, "voluntary_ctxt_switches:"); !ok {
		return s, false
	}
	if b, err = os.ReadFile("/proc/stat"); err == nil {
		// cpu user nice system idle iowait irq softirq steal ...
		if line, _, _ := bytes.Cut(b, []byte("\n")); len(bytes.Fields(line)) > 8 {
			s.steal, _ = strconv.ParseUint(string(bytes.Fields(line)[8]), 10, 64)
		}
	}
	metrics.Read(gcMetric)
	s.gcs = gcMetric[0].Value.Uint64()
	return s, true
}

// statusField reads the number after name in /proc status text.
func statusField(b []byte, name string) (uint64, bool) {
	i := bytes.Index(b, []byte(name))
	if i < 0 {
		return 0, false
	}
	rest := b[i+len(name):]
	if j := bytes.IndexByte(rest, '\n'); j >= 0 {
		rest = rest[:j]
	}
	n, err := strconv.ParseUint(string(bytes.TrimSpace(rest)), 10, 64)
	return n, err == nil
}

// timerSlack is the calling thread's timer slack: how much later than its
// timeout the kernel may end a sleep.
func timerSlack() time.Duration {
	ns, err := unix.PrctlRetInt(unix.PR_GET_TIMERSLACK, 0, 0, 0, 0)
	if err != nil || ns < 0 {
		return 50 * time.Microsecond // the kernel's default
	}
	return time.Duration(ns)
}

// noise is what the machine added to one call, from the samples around it.
type noise struct {
	delay   time.Duration // slack + queued + ran: may be added to the call's return
	decided bool          // nothing the meter cannot see happened
	why     string        // why not, when not
}

// measure returns the noise between samples a and b of a call whose
// selector slept sleeps times, each ended by its timeout.
func measure(a, b threadSample, okA, okB bool, sleeps uint64, slack time.Duration) noise {
	n := noise{delay: slack + (b.queued - a.queued) + (b.ran - a.ran), decided: true}
	switch {
	case !okA || !okB:
		n.decided, n.why = false, "no schedstat"
	case a.tid != b.tid:
		n.decided, n.why = false, "the goroutine changed thread"
	case b.sleeps-a.sleeps > sleeps:
		n.decided, n.why = false, "the thread slept outside the selector"
	case b.gcs != a.gcs:
		n.decided, n.why = false, "a garbage collection ran"
	case b.steal != a.steal:
		n.decided, n.why = false, "the hypervisor stole time"
	}
	return n
}
