package poll

import "time"

// Config tunes a Poll. The zero value is valid and means the defaults.
type Config struct {
	// Backend selects the OS mechanism: "epoll", "kqueue" or "poll". Empty
	// means the UNIPOLL_BACKEND environment variable, or else the best one
	// the OS has.
	Backend string
	// WheelTick is the resolution of delayed readiness: a delay fires no
	// earlier than asked and at most one tick late. Default 1ms.
	WheelTick time.Duration
	// WheelSlots is the number of slots in the timing wheel, rounded up to a
	// power of two. More slots make long delays cheaper. Default 1024.
	WheelSlots int
}

// Default configuration values.
const (
	DefaultWheelTick  = time.Millisecond
	DefaultWheelSlots = 1024
	maxWheelSlots     = 1 << 20
)

func (c Config) withDefaults() (Config, error) {
	if c.WheelTick < 0 || c.WheelSlots < 0 || c.WheelSlots > maxWheelSlots {
		return c, wrapf(ErrInvalidArgument, "config: WheelTick %v, WheelSlots %d", c.WheelTick, c.WheelSlots)
	}
	if c.WheelTick == 0 {
		c.WheelTick = DefaultWheelTick
	}
	if c.WheelSlots == 0 {
		c.WheelSlots = DefaultWheelSlots
	}
	n := 1
	for n < c.WheelSlots {
		n <<= 1
	}
	c.WheelSlots = n
	return c, nil
}
