package slab

import (
	"slices"
	"testing"

	"pgregory.net/rapid"
)

// chunkLive reports whether chunk c has a live index.
func chunkLive(live map[uint32]uint64, c uint32) bool {
	for i := range live {
		if i/ChunkSize == c {
			return true
		}
	}
	return false
}

// The slab against a map: every record allocated is the one Free cached
// (the first freed since an Alloc took the cache), else the lowest free
// index, keeps what was stored in it until freed, reads as zero when
// allocated, and the chunks in use are no more than the highest record,
// or the cached one, needs (plus the empty ones below it, which hold
// records again first).
func TestSlabModel(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		var s Slab[uint64]
		live := map[uint32]uint64{}
		next := uint64(1)
		// The model's free indexes: every index from top up, and holes
		// (sorted) below it.
		var holes []uint32
		top := uint32(0)
		hot := -1 // the record Free cached (the first freed since an Alloc took the cache)
		t.Repeat(map[string]func(*rapid.T){
			"alloc": func(t *rapid.T) {
				n := rapid.IntRange(1, 3*ChunkSize).Draw(t, "n")
				for range n {
					want := top
					if hot >= 0 {
						want = uint32(hot)
					} else if len(holes) > 0 {
						want, holes = holes[0], holes[1:]
					} else {
						top++
					}
					hot = -1
					idx, p := s.Alloc()
					if idx != want {
						t.Fatalf("Alloc = %d, want the lowest free index %d", idx, want)
					}
					if *p != 0 {
						t.Fatalf("record %d was allocated holding %d", idx, *p)
					}
					*p = next
					live[idx] = next
					next++
				}
			},
			"free": func(t *rapid.T) {
				if len(live) == 0 {
					t.Skip("empty")
				}
				keys := make([]uint32, 0, len(live))
				for k := range live {
					keys = append(keys, k)
				}
				n := rapid.IntRange(1, len(keys)).Draw(t, "n")
				for _, k := range keys[:n] {
					s.Free(k)
					delete(live, k)
					if hot < 0 {
						hot = int(k)
					} else {
						at, _ := slices.BinarySearch(holes, k)
						holes = slices.Insert(holes, at, k)
						if c := k / ChunkSize; c > 0 && uint32(hot)/ChunkSize == c && !chunkLive(live, c) {
							// The cached record alone would keep the chunk.
							at, _ := slices.BinarySearch(holes, uint32(hot))
							holes = slices.Insert(holes, at, uint32(hot))
							hot = -1
						}
					}
					if s.Valid(k) {
						t.Fatalf("record %d valid after Free", k)
					}
				}
			},
			"": func(t *rapid.T) {
				if s.Len() != len(live) {
					t.Fatalf("Len = %d, want %d", s.Len(), len(live))
				}
				hi := -1
				for k, v := range live {
					if !s.Valid(k) || *s.Get(k) != v {
						t.Fatalf("record %d: valid %v, holds %d, want %d", k, s.Valid(k), *s.Get(k), v)
					}
					hi = max(hi, int(k))
				}
				if hot >= 0 && s.Valid(uint32(hot)) {
					t.Fatalf("cached record %d valid", hot)
				}
				hi = max(hi, hot) // the cached record keeps its chunk
				need := 0
				if hi >= 0 {
					need = hi/ChunkSize + 1
				}
				if need == 0 && len(s.chunks) == 1 {
					need = 1 // chunk 0 stays once allocated
				}
				if len(s.chunks) != need {
					t.Fatalf("%d chunk slots for a highest record %d, want %d", len(s.chunks), hi, need)
				}
			},
		})
	})
}

// After a burst is freed, the memory goes back: one spare chunk stays.
func TestSlabShrinks(t *testing.T) {
	var s Slab[[4]uint64]
	const n = 100 * ChunkSize
	idx := make([]uint32, n)
	for i := range idx {
		idx[i], _ = s.Alloc()
	}
	if s.Chunks() != 100 {
		t.Fatalf("%d chunks for %d records", s.Chunks(), n)
	}
	for _, i := range idx[ChunkSize:] {
		s.Free(i)
	}
	if s.Chunks() != 1 || len(s.chunks) != 1 || cap(s.chunks) > 4 || s.spare == nil {
		t.Fatalf("after freeing all but chunk 0: %d chunks, %d slots, capacity %d, spare %v", s.Chunks(), len(s.chunks), cap(s.chunks), s.spare != nil)
	}
	// Chunk 0 stays, empty or not; the spare takes the next chunk's place.
	for _, i := range idx[:ChunkSize] {
		s.Free(i)
	}
	if s.Chunks() != 1 || s.Len() != 0 {
		t.Fatalf("empty slab: %d chunks, %d records", s.Chunks(), s.Len())
	}
	for range ChunkSize {
		s.Alloc()
	}
	spare := s.spare
	i, p := s.Alloc()
	if i != ChunkSize || *p != ([4]uint64{}) || s.chunks[1] != spare || s.spare != nil {
		t.Fatalf("Alloc past chunk 0: %d, %v, spare reused %v", i, *p, s.chunks[1] == spare)
	}
}

func BenchmarkSlabAllocFree(b *testing.B) {
	b.ReportAllocs()
	var s Slab[[4]uint64]
	for range 1000 {
		s.Alloc()
	}
	b.ResetTimer()
	for range b.N {
		i, _ := s.Alloc()
		s.Free(i)
	}
}
