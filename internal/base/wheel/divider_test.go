package wheel

import (
	"math"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"pgregory.net/rapid"
)

// The wheel's divider agrees with the division it replaces, for every
// divisor a tick can be and every dividend a time can be, edges included.
func TestWheelDivider(t *testing.T) {
	check := func(t require.TestingT, d, x uint64) {
		require.Equal(t, x/d, newDivider(d).div(x), "%d / %d", x, d)
	}
	for _, d := range []uint64{1, 2, 3, 7, 1000, 1_000_000, 1<<20 - 1, 1 << 20, 1<<20 + 1, uint64(time.Millisecond), uint64(time.Hour), 1<<62 + 12345, math.MaxInt64} {
		for _, x := range []uint64{0, 1, d - 1, d, d + 1, 2*d - 1, math.MaxInt64, math.MaxUint64, math.MaxUint64 - 1} {
			check(t, d, x)
		}
	}
	rapid.Check(t, func(t *rapid.T) {
		d := rapid.Uint64Range(1, math.MaxInt64).Draw(t, "d")
		if rapid.Bool().Draw(t, "small d") {
			d = rapid.Uint64Range(1, 1<<32).Draw(t, "d small")
		}
		check(t, d, rapid.Uint64().Draw(t, "x"))
	})
}
