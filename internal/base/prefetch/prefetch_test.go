package prefetch

import (
	"bytes"
	"testing"
	"unsafe"
)

// A hint changes no value, whatever the span: the buffer reads back as it
// was written, also around a span that runs past its end.
func TestSpanChangesNothing(t *testing.T) {
	buf := make([]byte, 16*LineSize)
	for i := range buf {
		buf[i] = byte(i * 7)
	}
	want := bytes.Clone(buf)
	for _, n := range []int{-1, 0, 1, 3, 16, 17} {
		Span(unsafe.Pointer(&buf[0]), n)
		Span(unsafe.Pointer(&buf[5*LineSize+3]), n)
	}
	if !bytes.Equal(buf, want) {
		t.Fatal("a prefetch changed memory")
	}
}

// A hint never faults: nil, where nothing is mapped, is only a wasted
// hint (the first page of the address space is never mapped for Go).
func TestSpanNeverFaults(t *testing.T) {
	Span(nil, 4)
	var x struct{ a, b uint64 }
	x.a = 42
	Span(unsafe.Pointer(&x), 1)
	if x.a != 42 {
		t.Fatal("a prefetch changed a value")
	}
}
