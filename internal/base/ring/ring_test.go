package ring

import (
	"testing"

	"pgregory.net/rapid"
)

// The ring against a slice: every value comes out in the order it went
// in, At sees the values oldest first, the buffer stays a power of two
// no shorter than the values, and popped slots hold nothing.
func TestRingModel(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		var r Ring[*int]
		var model []*int
		next := 0
		t.Repeat(map[string]func(*rapid.T){
			"push": func(t *rapid.T) {
				for range rapid.IntRange(1, 40).Draw(t, "n") {
					next++
					v := new(int)
					*v = next
					r.Push(v)
					model = append(model, v)
				}
			},
			"pop": func(t *rapid.T) {
				for range rapid.IntRange(1, 40).Draw(t, "n") {
					v, ok := r.Pop()
					if len(model) == 0 {
						if ok || v != nil {
							t.Fatalf("Pop of an empty ring = %v, %v", v, ok)
						}
						return
					}
					if !ok || v != model[0] {
						t.Fatalf("Pop = %v, %v; want %d", v, ok, *model[0])
					}
					model = model[1:]
				}
			},
			"trim": func(t *rapid.T) {
				keep := rapid.IntRange(0, 64).Draw(t, "keep")
				had := r.Cap()
				r.Trim(keep)
				if len(model) == 0 && had > keep && r.Cap() != 0 {
					t.Fatalf("Trim(%d) of an empty ring kept a buffer of %d", keep, r.Cap())
				}
				if (len(model) > 0 || had <= keep) && r.Cap() != had {
					t.Fatalf("Trim(%d) changed the buffer from %d to %d with %d values", keep, had, r.Cap(), len(model))
				}
			},
			"": func(t *rapid.T) {
				if r.Len() != len(model) {
					t.Fatalf("Len = %d, want %d", r.Len(), len(model))
				}
				c := r.Cap()
				if c != 0 && (c&(c-1) != 0 || c < len(model)) {
					t.Fatalf("Cap = %d with %d values: not a power of two that holds them", c, len(model))
				}
				for i, v := range model {
					if r.At(i) != v {
						t.Fatalf("At(%d) = %v, want %d", i, r.At(i), *v)
					}
				}
				for i := len(model); i < c; i++ {
					if v := r.buf[(r.head+i)&(c-1)]; v != nil {
						t.Fatalf("free slot %d holds %d", i, *v)
					}
				}
			},
		})
	})
}

func TestRingReset(t *testing.T) {
	var r Ring[int]
	for i := range 100 {
		r.Push(i)
	}
	r.Reset()
	if r.Len() != 0 || r.Cap() != 0 {
		t.Fatalf("after Reset: Len %d, Cap %d", r.Len(), r.Cap())
	}
	if v, ok := r.Pop(); ok {
		t.Fatalf("Pop after Reset = %d", v)
	}
}

// BenchmarkRing is a steady push and pop at a depth of 64, the pattern of
// the held list and the run queue.
func BenchmarkRing(b *testing.B) {
	var r Ring[*int]
	v := new(int)
	for range 64 {
		r.Push(v)
	}
	b.ReportAllocs()
	for range b.N {
		r.Push(v)
		if _, ok := r.Pop(); !ok {
			b.Fatal("empty")
		}
	}
}
