package main

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
)

// size is a flag holding a number of bytes, written as redis.conf writes
// memory sizes: a plain number of bytes, or one with a unit, k m g for
// powers of 1000 and kb mb gb for powers of 1024, in any case ("16mb",
// "1GB", "65536"). A redis user's habits carry over.
type size int

// errSize is a size flag that is not a positive number of bytes.
var errSize = errors.New("not a size: want a positive number of bytes, with k, kb, m, mb, g or gb (as redis.conf)")

// units, longest suffix first so that "kb" is not read as "k" and a "b".
var units = []struct {
	suffix string
	n      int64
}{
	{"kb", 1 << 10}, {"mb", 1 << 20}, {"gb", 1 << 30},
	{"k", 1e3}, {"m", 1e6}, {"g", 1e9},
}

// Set parses s; a zero, negative or overflowing size is refused.
func (z *size) Set(s string) error {
	t, mul := strings.ToLower(strings.TrimSpace(s)), int64(1)
	for _, u := range units {
		if strings.HasSuffix(t, u.suffix) {
			t, mul = strings.TrimSpace(t[:len(t)-len(u.suffix)]), u.n
			break
		}
	}
	n, err := strconv.ParseInt(t, 10, 64)
	if err != nil || n <= 0 || n > int64(maxSize)/mul {
		return fmt.Errorf("%w: %q", errSize, s)
	}
	*z = size(n * mul)
	return nil
}

// maxSize is the largest size a flag takes: what an int holds on a 32-bit
// machine, so that the sizes are the same everywhere.
const maxSize = 1<<31 - 1

// String writes the size in the largest binary unit that divides it, as
// the flag package shows defaults.
func (z size) String() string {
	for i := 2; i >= 0; i-- {
		if u := units[i]; z > 0 && int64(z)%u.n == 0 {
			return strconv.FormatInt(int64(z)/u.n, 10) + u.suffix
		}
	}
	return strconv.Itoa(int(z))
}
