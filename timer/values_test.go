package timer

import (
	"reflect"
	"testing"
	"time"
	"unsafe"

	"github.com/stretchr/testify/require"

	"github.com/unipoll/unipoll/poll"
)

// Where each type's values travel: in the key (at most 8 bytes, nothing
// the garbage collector must see), beside it (at most 16 bytes, a pointer
// in the first word and none in the second), or in the slab.
func TestValueModes(t *testing.T) {
	type pair struct {
		A int32
		B float32
	}
	type withPtr struct {
		A int32
		P *int32
	}
	type ptrFirst struct {
		P *int32
		N int64
	}
	type ptrAndSmall struct {
		P *int32
		N int8
	}
	type twoPtrs struct {
		P, Q *int32
	}
	type nested struct {
		S struct{ P *int }
		N [2]uint32
	}
	cases := []struct {
		got  valueMode
		want valueMode
		name string
	}{
		{modeOf[int](), inKey, "int"},
		{modeOf[int8](), inKey, "int8"},
		{modeOf[uint64](), inKey, "uint64"},
		{modeOf[uintptr](), inKey, "uintptr"},
		{modeOf[bool](), inKey, "bool"},
		{modeOf[float64](), inKey, "float64"},
		{modeOf[complex64](), inKey, "complex64"},
		{modeOf[poll.Token](), inKey, "poll.Token"},
		{modeOf[time.Duration](), inKey, "time.Duration"},
		{modeOf[pair](), inKey, "struct of two 4-byte numbers"},
		{modeOf[[2]uint32](), inKey, "[2]uint32"},
		{modeOf[[0]*int](), inKey, "[0]*int"},
		{modeOf[struct{}](), inKey, "struct{}"},
		{modeOf[*int](), besideKey, "*int"},
		{modeOf[unsafe.Pointer](), besideKey, "unsafe.Pointer"},
		{modeOf[string](), besideKey, "string"},
		{modeOf[map[int]int](), besideKey, "map"},
		{modeOf[chan int](), besideKey, "chan"},
		{modeOf[func()](), besideKey, "func"},
		{modeOf[[1]*int](), besideKey, "[1]*int"},
		{modeOf[ptrFirst](), besideKey, "struct of a pointer, then a number"},
		{modeOf[ptrAndSmall](), besideKey, "struct of a pointer, then a byte"},
		{modeOf[nested](), besideKey, "nested struct, pointer first"},
		{modeOf[[9]byte](), inSlab, "[9]byte: too big for the key, no pointer"},
		{modeOf[complex128](), inSlab, "complex128: too big for the key, no pointer"},
		{modeOf[withPtr](), inSlab, "struct with its pointer second"},
		{modeOf[twoPtrs](), inSlab, "two pointers"},
		{modeOf[[2]*int](), inSlab, "[2]*int"},
		{modeOf[any](), inSlab, "interface: two pointers"},
		{modeOf[error](), inSlab, "error"},
		{modeOf[[]byte](), inSlab, "[]byte: 24 bytes"},
		{modeOf[[3]*int](), inSlab, "[3]*int: 24 bytes"},
	}
	for _, c := range cases {
		require.Equal(t, c.want, c.got, c.name)
	}
	var ptr [2]bool
	require.True(t, pointerWords(reflect.TypeFor[int64](), 0, &ptr))
	require.Equal(t, [2]bool{}, ptr)
}

// A value in the key or beside it comes back bit for bit from Cancel and
// from TryRecv, for every shape of type that fits.
func TestValuesRoundTrip(t *testing.T) {
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
	x, y := 1, 2
	roundTrip(t, &x, &y)
	roundTrip(t, "beside", "the key")
	roundTrip(t, "", "")
	roundTrip(t, struct {
		P *int
		N int8
	}{&x, -3}, struct {
		P *int
		N int8
	}{nil, 127})
	roundTrip(t, map[int]int{1: 2}, nil)
	roundTrip[any](t, "slab", 7) // and one in the slab, the same way
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
