package timer

import (
	"reflect"
	"unsafe"
)

// Values in the key. Every timeout's entry in the wheel carries a 64-bit
// key, which the Timer otherwise spends on an index into its slab of
// values. A value of a type that fits in those 64 bits and holds no
// pointer (an int, a poll.Token, a small struct of numbers) can be the key
// itself: Set and Cancel then touch no slab and run no callback under the
// wheel's lock, which is a sixth of a Set+Cancel pair (bench/GAPS.md,
// "Timers"). A type with a pointer cannot: the garbage collector does not
// look inside a key, so the value it points to could be freed while the
// timeout waits. Such values stay in the slab.

// inlineable reports whether a T may travel in a wheel key.
func inlineable[T any]() bool {
	t := reflect.TypeFor[T]()
	return t.Size() <= 8 && t.Align() <= 8 && pointerFree(t)
}

// pointerFree reports whether a value of type t holds no pointer that the
// garbage collector must see.
func pointerFree(t reflect.Type) bool {
	switch t.Kind() {
	case reflect.Bool,
		reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr,
		reflect.Float32, reflect.Float64, reflect.Complex64:
		return true
	case reflect.Array:
		return t.Len() == 0 || pointerFree(t.Elem())
	case reflect.Struct:
		for i := range t.NumField() {
			if !pointerFree(t.Field(i).Type) {
				return false
			}
		}
		return true
	}
	return false
}

// pack stores v in a key; only for a T that inlineable accepts, whose size
// and alignment fit a uint64's.
func pack[T any](v T) (k uint64) {
	*(*T)(unsafe.Pointer(&k)) = v
	return k
}

// unpack is pack's inverse.
func unpack[T any](k uint64) T {
	return *(*T)(unsafe.Pointer(&k))
}
