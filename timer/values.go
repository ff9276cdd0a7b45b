package timer

import (
	"reflect"
	"unsafe"
)

// Where a Timer keeps its values. Every timeout's entry in the wheel
// carries a 64-bit key, and can carry one pointer beside it
// (internal/base/wheel, ptrs.go), where the garbage collector sees it. A
// value that fits in those two words, with any pointer it holds in the
// first, travels in its entry: Set and Cancel then touch no table of the
// Timer's own and run no callback under the wheel's lock, which is a
// sixth of a Set+Cancel pair (bench/GAPS.md, "Timers"). So:
//
//   - inKey: at most 8 bytes, no pointer (an int, a poll.Token, a small
//     struct of numbers): the value is the key, nothing beside it.
//   - besideKey: at most 16 bytes whose first word is a pointer and whose
//     second holds none (a *Request, a map, a func, a string, a struct of
//     a pointer and a number): the first word goes beside the key, the
//     second in it.
//   - inSlab: anything else (an interface, a slice, a bigger struct): the
//     key is an index into the Timer's slab of values.
//
// A pointer cannot hide in a key: the collector does not look inside
// one, so what it points to could be freed while the timeout waits.
type valueMode uint8

const (
	inSlab valueMode = iota
	inKey
	besideKey
)

// modeOf returns where a Timer keeps values of type T.
func modeOf[T any]() valueMode {
	t := reflect.TypeFor[T]()
	if t.Size() > 16 || t.Align() > 8 {
		return inSlab
	}
	var ptr [2]bool // which of the two words holds a pointer
	if !pointerWords(t, 0, &ptr) {
		return inSlab
	}
	switch {
	case t.Size() <= 8 && !ptr[0]:
		return inKey
	case ptr[0] && !ptr[1]:
		return besideKey
	}
	return inSlab
}

// pointerWords marks in ptr the words of a value of type t, at offset off
// in a value of at most 16 bytes, that hold a pointer the garbage
// collector must see. It returns false for a kind it does not know.
func pointerWords(t reflect.Type, off uintptr, ptr *[2]bool) bool {
	switch t.Kind() {
	case reflect.Bool,
		reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr,
		reflect.Float32, reflect.Float64, reflect.Complex64, reflect.Complex128:
		return true
	case reflect.Pointer, reflect.UnsafePointer, reflect.Map, reflect.Chan, reflect.Func,
		reflect.String: // a string's first word points to its bytes, its second is the length
		ptr[off/8] = true
		return true
	case reflect.Interface:
		ptr[off/8], ptr[off/8+1] = true, true
		return true
	case reflect.Array:
		for i := range t.Len() {
			if !pointerWords(t.Elem(), off+uintptr(i)*t.Elem().Size(), ptr) {
				return false
			}
		}
		return true
	case reflect.Struct:
		for i := range t.NumField() {
			f := t.Field(i)
			if !pointerWords(f.Type, off+f.Offset, ptr) {
				return false
			}
		}
		return true
	}
	return false // a slice is 24 bytes: never here
}

// words is a value of mode besideKey laid out as the wheel keeps it: the
// first word, a pointer, beside the key; the second in it.
type words struct {
	p unsafe.Pointer
	k uint64
}

// split returns the key and the pointer that carry v in its wheel entry;
// only for a T of mode inKey or besideKey (m).
func split[T any](m valueMode, v T) (uint64, unsafe.Pointer) {
	if m == inKey {
		var k uint64
		*(*T)(unsafe.Pointer(&k)) = v
		return k, nil
	}
	// T's pointer word lands on w.p, its other word on w.k: the collector
	// sees the pointer at every step.
	var w words
	*(*T)(unsafe.Pointer(&w)) = v
	return w.k, w.p
}

// join is split's inverse.
func join[T any](m valueMode, k uint64, p unsafe.Pointer) T {
	if m == inKey {
		return *(*T)(unsafe.Pointer(&k))
	}
	w := words{p, k}
	return *(*T)(unsafe.Pointer(&w))
}
