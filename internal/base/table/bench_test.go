package table

import "testing"

const benchLive = 4096

func benchTable(b *testing.B) (*Table[[4]uint64], []Handle) {
	tab := new(Table[[4]uint64])
	hs := make([]Handle, benchLive)
	for i := range hs {
		h, _, err := tab.Alloc()
		if err != nil {
			b.Fatal(err)
		}
		hs[i] = h
	}
	return tab, hs
}

// BenchmarkTableLookup is the per-event path: a Handle from an event to
// its record, checked.
func BenchmarkTableLookup(b *testing.B) {
	tab, hs := benchTable(b)
	b.ResetTimer()
	for i := range b.N {
		if _, ok := tab.Lookup(hs[i&(benchLive-1)]); !ok {
			b.Fatal("lost")
		}
	}
}

// BenchmarkTableLoad is Load, the lookup of a reader without a lock.
func BenchmarkTableLoad(b *testing.B) {
	tab, hs := benchTable(b)
	b.ResetTimer()
	for i := range b.N {
		if tab.Load(hs[i&(benchLive-1)].Idx) == nil {
			b.Fatal("lost")
		}
	}
}

// BenchmarkTableAllocFree is a slot's turnover at a steady population.
func BenchmarkTableAllocFree(b *testing.B) {
	for _, shrink := range []bool{false, true} {
		name := "keep"
		if shrink {
			name = "shrink"
		}
		b.Run(name, func(b *testing.B) {
			tab, hs := benchTable(b)
			tab.Shrink = shrink
			b.ReportAllocs()
			b.ResetTimer()
			for i := range b.N {
				k := (i * 7) & (benchLive - 1)
				if !tab.Free(hs[k]) {
					b.Fatal("lost")
				}
				h, _, err := tab.Alloc()
				if err != nil {
					b.Fatal(err)
				}
				hs[k] = h
			}
		})
	}
}

// BenchmarkSliceLookup is the baseline Lookup is measured against: a flat
// slice indexed by number with a generation check, as the Poll's
// descriptor table was.
func BenchmarkSliceLookup(b *testing.B) {
	type rec struct {
		gen uint32
		v   [4]uint64
	}
	s := make([]rec, benchLive)
	for i := range s {
		s[i].gen = uint32(i + 1)
	}
	b.ResetTimer()
	for i := range b.N {
		k := i & (benchLive - 1)
		if k >= len(s) || s[k].gen != uint32(k+1) || s[k].v[0] != 0 {
			b.Fatal("lost")
		}
	}
}

// BenchmarkTableAllocFreeTop is internal/base/slab's BenchmarkSlabAllocFree:
// one slot above a thousand in use, taken and given back.
func BenchmarkTableAllocFreeTop(b *testing.B) {
	b.ReportAllocs()
	var tab Table[[4]uint64]
	for range 1000 {
		if _, _, err := tab.Alloc(); err != nil {
			b.Fatal(err)
		}
	}
	b.ResetTimer()
	for range b.N {
		h, _, _ := tab.Alloc()
		tab.Free(h)
	}
}
