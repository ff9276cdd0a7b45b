package poll

import (
	"math/bits"
	"os"
	"time"

	"github.com/unipoll/unipoll/sys"
)

// Config tunes a Poll. The zero value is valid and means the defaults.
type Config struct {
	// Backend selects the OS mechanism: "epoll", "kqueue" or "poll". Empty
	// means the UNIPOLL_BACKEND environment variable (EnvBackend), or else
	// the best one the OS has.
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
	// SpinWait is how long a Poll call keeps watching the readiness queue
	// before it blocks, when the previous call delivered Registration
	// events. Producers that find the Poll awake need no system call to
	// wake it, so a busy stream of SetReadiness costs far fewer waker
	// writes, at the price of this much CPU before each sleep. Default
	// 20µs; negative disables it.
	SpinWait time.Duration
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

func (c Config) withDefaults() (Config, error) {
	if c.Backend == "" {
		c.Backend = os.Getenv(EnvBackend)
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
