package timer

import (
	"reflect"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/unipoll/unipoll/poll"
)

// Which values travel in the wheel key: at most 8 bytes, and nothing the
// garbage collector must see.
func TestInlineable(t *testing.T) {
	type pair struct {
		A int32
		B float32
	}
	type withPtr struct {
		A int32
		P *int32
	}
	cases := []struct {
		got  bool
		want bool
		name string
	}{
		{inlineable[int](), true, "int"},
		{inlineable[int8](), true, "int8"},
		{inlineable[uint64](), true, "uint64"},
		{inlineable[uintptr](), true, "uintptr"},
		{inlineable[bool](), true, "bool"},
		{inlineable[float64](), true, "float64"},
		{inlineable[complex64](), true, "complex64"},
		{inlineable[poll.Token](), true, "poll.Token"},
		{inlineable[time.Duration](), true, "time.Duration"},
		{inlineable[pair](), true, "struct of two 4-byte numbers"},
		{inlineable[[2]uint32](), true, "[2]uint32"},
		{inlineable[[0]*int](), true, "[0]*int"},
		{inlineable[struct{}](), true, "struct{}"},
		{inlineable[[9]byte](), false, "[9]byte: too big"},
		{inlineable[complex128](), false, "complex128: too big"},
		{inlineable[*int](), false, "*int"},
		{inlineable[string](), false, "string"},
		{inlineable[[]byte](), false, "[]byte"},
		{inlineable[map[int]int](), false, "map"},
		{inlineable[chan int](), false, "chan"},
		{inlineable[func()](), false, "func"},
		{inlineable[any](), false, "interface"},
		{inlineable[withPtr](), false, "struct with a pointer"},
		{inlineable[[1]*int](), false, "[1]*int"},
	}
	for _, c := range cases {
		require.Equal(t, c.want, c.got, c.name)
	}
	require.True(t, pointerFree(reflect.TypeFor[int64]()))
}

// A value in the key comes back bit for bit from Cancel and from TryRecv,
// for every shape of type that fits.
func TestInlineValuesRoundTrip(t *testing.T) {
	type pair struct {
		A int32
		B float32
	}
	roundTrip(t, -1<<63, 1<<62+5)
	roundTrip(t, int8(-7), int8(127))
	roundTrip(t, poll.Token(1<<40), poll.Token(3))
	roundTrip(t, pair{-1, 2.5}, pair{7, -0.25})
	roundTrip(t, [3]uint16{1, 2, 65535}, [3]uint16{4, 5, 6})
	roundTrip(t, complex64(complex(1.5, -2)), complex64(0))
	roundTrip(t, true, false)
	roundTrip(t, "slab", "values") // and one that is not inline, the same way
}

func roundTrip[T any](t *testing.T, a, b T) {
	t.Helper()
	p := newPoll(t)
	tm := newTimer[T](t, p, poll.Edge)
	ta, err := tm.Set(time.Hour, a)
	require.NoError(t, err)
	_, err = tm.Set(time.Millisecond, b)
	require.NoError(t, err)
	require.Equal(t, 2, tm.Len())
	v, ok := tm.Cancel(ta)
	require.True(t, ok)
	require.Equal(t, a, v)
	_, ok = tm.Cancel(ta)
	require.False(t, ok, "cancelled twice")
	waitEvent(t, p)
	v, ok = tm.TryRecv()
	require.True(t, ok)
	require.Equal(t, b, v)
	require.Zero(t, tm.Len())
	var zero T
	v, ok = tm.TryRecv()
	require.False(t, ok)
	require.Equal(t, zero, v)
}
