package poll

import (
	"math/bits"
	"os"
	"time"

	"github.com/unipoll/unipoll/sys"
)

// Config tunes a Poll. The zero value is valid and means the defaults.
type Config struct {
	// Backend selects the OS mechanism: "epoll", "kqueue", "poll" or
	// "uring" (io_uring, Linux 5.13+; never the default, and where the
	// kernel refuses it NewWithConfig fails with sys.ErrBackendUnavailable;
	// the first Poll call locks its goroutine to its OS thread, see
	// sys.BackendUring).
	// Empty means the UNIPOLL_BACKEND environment variable (EnvBackend), or
	// else the best one the OS has.
	Backend string
	// WheelTick is the resolution of delayed readiness: a delay fires no
	// earlier than asked and at most one tick late. Default 1ms.
	WheelTick time.Duration
	// WheelSlots is the number of slots in each level of the hierarchical
	// timing wheel, rounded up to a power of two from 2 to 64. Fewer slots
	// make more levels, so a deadline moves down more often on its way to
	// firing; the default, 64, is what the wheel is built for (a level's
	// slots fit one word of its occupancy bitmap). Tests use small values to
	// make every level work.
	WheelSlots int
	// Wait is how a Poll on epoll blocks when it has to: "look" (the
	// default: a non-blocking look first, then block), "block" (block at
	// once) or "park" (look, then park on the Go runtime's netpoller, so
	// that a waiting Poll holds no thread; experimental). Empty means the
	// UNIPOLL_WAIT environment variable, or else the default.
	// Other backends ignore it. bench/WAITING.md has the measurements.
	Wait string
	// SpinWait is how long a Poll call keeps watching the readiness queue
	// before it blocks, when the previous call delivered Registration
	// events. Producers that find the Poll awake need no system call to
	// wake it, so a busy stream of SetReadiness costs far fewer waker
	// writes, at the price of this much CPU before each sleep. Registered
	// descriptors are looked at during the spin too (about once a
	// microsecond), so their events are not held back by it. Default
	// 20µs; negative disables it.
	SpinWait time.Duration
	// Completion makes the "uring" backend do the I/O of connected stream
	// sockets itself (see Stream): the socket package's TCPConn and
	// UnixConn then read bytes the ring has already received and queue
	// their writes for the ring to send, with no system call of their
	// own. Other backends ignore it. False means the UNIPOLL_COMPLETION
	// environment variable ("1" turns it on).
	Completion bool
}

// Default configuration values.
const (
	DefaultWheelTick  = time.Millisecond
	DefaultWheelSlots = maxWheelSlots
	DefaultSpinWait   = 20 * time.Microsecond
)

// EnvBackend names the environment variable that chooses the backend of
// every Poll whose Config leaves Backend empty: the test suite runs once per
// backend with it (UNIPOLL_BACKEND=epoll, =poll).
const EnvBackend = sys.EnvBackend

// EnvCompletion names the environment variable that turns
// Config.Completion on ("1") for every Poll whose Config leaves it false:
// the test suite runs on uring with it too.
const EnvCompletion = "UNIPOLL_COMPLETION"

// envWait names the environment variable that chooses Config.Wait for
// every Poll whose Config leaves it empty.
const envWait = "UNIPOLL_WAIT"

func (c Config) withDefaults() (Config, error) {
	if c.Backend == "" {
		c.Backend = os.Getenv(EnvBackend)
	}
	if c.Wait == "" {
		c.Wait = os.Getenv(envWait)
	}
	if !c.Completion {
		c.Completion = os.Getenv(EnvCompletion) == "1"
	}
	if c.WheelTick < 0 {
		return c, wrapf(ErrInvalidArgument, "config: WheelTick %v is negative", c.WheelTick)
	}
	if c.WheelSlots < 0 || c.WheelSlots > maxWheelSlots {
		return c, wrapf(ErrInvalidArgument, "config: WheelSlots %d: slots per wheel level, from 2 to %d", c.WheelSlots, maxWheelSlots)
	}
	if c.WheelTick == 0 {
		c.WheelTick = DefaultWheelTick
	}
	if c.WheelSlots == 0 {
		c.WheelSlots = DefaultWheelSlots
	}
	switch {
	case c.SpinWait == 0:
		c.SpinWait = DefaultSpinWait
	case c.SpinWait < 0:
		c.SpinWait = 0
	}
	c.WheelSlots = max(2, 1<<bits.Len(uint(c.WheelSlots-1)))
	return c, nil
}
