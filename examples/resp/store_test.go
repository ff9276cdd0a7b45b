package main

import (
	"strconv"
	"testing"

	"github.com/stretchr/testify/require"
)

// sweep drops expired keys that nobody looks at, and only those.
func TestStoreSweep(t *testing.T) {
	db := newStore()
	past := now() - 1
	for i := range 1000 {
		require.True(t, db.set([]byte("old"+strconv.Itoa(i)), []byte("v"), past, setAlways))
		require.True(t, db.set([]byte("new"+strconv.Itoa(i)), []byte("v"), 0, setAlways))
	}
	require.Equal(t, 2000, db.size())
	dropped := 0
	for dropped < 1000 {
		n := db.sweep(64)
		require.Positive(t, n, "a sweep found nothing with %d expired keys left", 1000-dropped)
		dropped += n
	}
	require.Equal(t, 1000, dropped)
	require.Equal(t, 1000, db.size())
	require.Zero(t, db.sweep(1<<20))
}

// The stored-integer rule of INCR: redis' string2ll.
func TestParseInteger(t *testing.T) {
	for s, ok := range map[string]bool{
		"0": true, "-1": true, "123": true, "9223372036854775807": true, "-9223372036854775808": true,
		"": false, "+1": false, "01": false, "-0": false, " 1": false, "1 ": false, "1a": false,
		"9223372036854775808": false, "-": false,
	} {
		_, got := parseInteger([]byte(s))
		require.Equal(t, ok, got, "%q", s)
	}
}

// An expired key does not exist for SET NX and XX, as for GET: NX sets it,
// XX refuses, also while the sweep has not dropped it yet.
func TestStoreSetModesOnExpiredKey(t *testing.T) {
	db := newStore()
	past := now() - 1
	require.True(t, db.set([]byte("k"), []byte("old"), past, setAlways))
	require.Equal(t, 1, db.size(), "the expired key is still stored, not yet swept")
	require.False(t, db.set([]byte("k"), []byte("xx"), 0, setXX), "SET XX on an expired key")
	require.True(t, db.set([]byte("k"), []byte("nx"), 0, setNX), "SET NX on an expired key")
	v, ok := db.get([]byte("k"), nil, func(dst, v []byte) []byte { return append(dst, v...) })
	require.True(t, ok)
	require.Equal(t, "nx", string(v))
	require.False(t, db.set([]byte("k"), []byte("again"), 0, setNX), "SET NX on a live key")
	require.True(t, db.set([]byte("k"), []byte("xx"), 0, setXX), "SET XX on a live key")
}
