package main

import (
	"bytes"
	"testing"

	"github.com/stretchr/testify/require"
)

// A "*" or "$" header line that never ends is waited for up to the line
// bound (maxInline bytes, counted from its type byte) and refused one
// byte past it, with the error redis gives; a line end within the bound
// makes it an ordinary (here invalid) length.
func TestHeaderLineBound(t *testing.T) {
	for _, lim := range []limits{defaultLimits, fuzzLimits} {
		for _, tc := range []struct {
			name   string
			before string // the request up to the header's type byte
			typ    byte
			tooBig error
			notInt error
		}{
			{"array", "", '*', errTooBigMbulk, errMultibulkLen},
			{"bulk", "*2\r\n$3\r\nGET\r\n", '$', errTooBigBulk, errBulkLen},
		} {
			// The header line as a peer that never ends it sends it: a
			// plausible length that goes on and on.
			line := func(n int) []byte {
				b := append([]byte(tc.before), tc.typ)
				return append(b, bytes.Repeat([]byte("1"), n-1)...)
			}
			for _, n := range []int{1, 2, lim.maxInline - 1, lim.maxInline} {
				_, _, err := parse(line(n), nil, lim)
				require.ErrorIs(t, err, errIncomplete, "%s header of %d bytes, bound %d", tc.name, n, lim.maxInline)
			}
			for _, n := range []int{lim.maxInline + 1, lim.maxInline + 2, 2 * lim.maxInline} {
				_, _, err := parse(line(n), nil, lim)
				require.Equal(t, tc.tooBig, err, "%s header of %d bytes, bound %d", tc.name, n, lim.maxInline)
			}
			// Not digits: still bounded by its length alone, as redis does.
			junk := append([]byte(tc.before), tc.typ)
			junk = append(junk, bytes.Repeat([]byte(" \r"), lim.maxInline/2)...)
			_, _, err := parse(junk, nil, lim)
			require.Equal(t, tc.tooBig, err, "%s header of %d bytes of junk", tc.name, len(junk)-len(tc.before))
			// Ended at the bound: a length too long to be one.
			_, _, err = parse(append(line(lim.maxInline), "\r\n"...), nil, lim)
			require.Equal(t, tc.notInt, err, "%s header ended at the bound", tc.name)
		}
	}
}
