//go:build darwin || freebsd || netbsd || openbsd || dragonfly

package sys

import (
	"unsafe"

	"golang.org/x/sys/unix"
)

// Keys in udata, and the garbage collector.
//
// The key travels through the kernel in each kevent's udata. On most of
// these systems x/sys declares udata as *byte, but a key is an integer, not a
// Go pointer: were the garbage collector or the stack copier to see it in a
// pointer-typed slot it could take it for a bad pointer and throw. So:
//   - every unix.Kevent_t the kqueue files write a key into lives in memory
//     allocated as a pointer-free type (newKevents, or a [N]uint64 array
//     viewed through keventsIn), which the collector never scans, and
//   - udata is only ever stored and loaded as an integer of its own width
//     (setUdata, getUdata), never through the *byte field, and a Kevent_t is
//     only ever handled through a pointer, never copied into a typed
//     variable.
//
// Where udata is narrower than 64 bits (the 32-bit ports) it cannot carry a
// key; it carries the registration's tag instead, and Select maps (fd, tag)
// back to the key through the registration table.
const (
	keventWords   = (unsafe.Sizeof(unix.Kevent_t{}) + 7) / 8
	udataHoldsKey = unsafe.Sizeof(unix.Kevent_t{}.Udata) >= 8
)

// newKevents returns n kevents in memory that the garbage collector does not
// scan.
func newKevents(n int) []unix.Kevent_t {
	raw := make([]uint64, uintptr(n)*keventWords)
	return keventsIn(raw, n)
}

// keventsIn views the pointer-free buffer raw as n kevents.
func keventsIn(raw []uint64, n int) []unix.Kevent_t {
	if uintptr(len(raw)) < uintptr(n)*keventWords {
		panic("sys: kevent buffer too small")
	}
	return unsafe.Slice((*unix.Kevent_t)(unsafe.Pointer(unsafe.SliceData(raw))), n)
}

func setUdata(k *unix.Kevent_t, v uint64) {
	p := unsafe.Pointer(&k.Udata)
	if unsafe.Sizeof(k.Udata) == 8 {
		*(*uint64)(p) = v
	} else {
		*(*uint32)(p) = uint32(v)
	}
}

func getUdata(k *unix.Kevent_t) uint64 {
	p := unsafe.Pointer(&k.Udata)
	if unsafe.Sizeof(k.Udata) == 8 {
		return *(*uint64)(p)
	}
	return uint64(*(*uint32)(p))
}

// setKevent fills a change. k must come from a pointer-free buffer and be
// zeroed, apart from what this sets.
func setKevent(k *unix.Kevent_t, ident, filter, flags int, udata uint64) {
	unix.SetKevent(k, ident, filter, flags)
	setUdata(k, udata)
}
