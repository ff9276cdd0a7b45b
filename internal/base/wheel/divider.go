package wheel

import "math/bits"

// divider divides by a fixed d with a multiplication, two shifts and an
// add (Granlund and Montgomery, "Division by invariant integers using
// multiplication", 1994): exact for every uint64. A 64-bit DIV takes tens
// of cycles, and every deadline the wheel places needs one or two (its
// due tick, the current tick).
type divider struct {
	m        uint64
	sh1, sh2 uint
}

// newDivider returns a divider by d, 1 <= d < 2^63 (a positive Duration).
func newDivider(d uint64) divider {
	l := uint(64 - bits.LeadingZeros64(d-1)) // ceil(log2 d), at most 63
	// m = floor(2^64 * (2^l - d) / d) + 1; 2^l - d < d, so Div64 does not
	// overflow.
	q, _ := bits.Div64((uint64(1)<<l)-d, 0, d)
	return divider{m: q + 1, sh1: min(l, 1), sh2: max(l, 1) - 1}
}

func (v divider) div(x uint64) uint64 {
	t, _ := bits.Mul64(v.m, x)
	return (t + (x-t)>>v.sh1) >> v.sh2
}
