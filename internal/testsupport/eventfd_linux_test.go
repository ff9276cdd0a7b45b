package testsupport

import (
	"testing"

	"github.com/stretchr/testify/require"
)

// A level-triggered RawEventfd is reported while its counter is not zero,
// and Take reads the sum of what was added.
func TestRawEventfdLevel(t *testing.T) {
	r := NewRawEventfd(t, false)
	ok, err := r.Poll()
	require.NoError(t, err)
	require.False(t, ok, "reported with a zero counter")
	require.NoError(t, r.Add(2))
	require.NoError(t, r.Add(3))
	require.NoError(t, r.Wait())
	ok, err = r.Poll()
	require.NoError(t, err)
	require.True(t, ok, "level: reported again while the counter is not zero")
	v, err := r.Take()
	require.NoError(t, err)
	require.Equal(t, uint64(5), v)
	v, err = r.Take()
	require.NoError(t, err)
	require.Zero(t, v)
	ok, err = r.Poll()
	require.NoError(t, err)
	require.False(t, ok, "reported after Take reset the counter")
}

// An edge-triggered RawEventfd is reported once per Add, without a read.
func TestRawEventfdEdge(t *testing.T) {
	r := NewRawEventfd(t, true)
	for range 3 {
		require.NoError(t, r.Add(1))
		ok, err := r.Poll()
		require.NoError(t, err)
		require.True(t, ok, "each write is an edge")
		ok, err = r.Poll()
		require.NoError(t, err)
		require.False(t, ok, "edge: reported once")
	}
}

// BenchmarkNotifyEventfd runs NotifyEventfd, so that it runs wherever
// benchmarks run (CI runs each once).
func BenchmarkNotifyEventfd(b *testing.B) { NotifyEventfd(b, 1024) }
