package table

import (
	"errors"
	"maps"
	"slices"
	"sync"
	"testing"

	"pgregory.net/rapid"
)

// chunkLive reports whether chunk c has a live index.
func chunkLive(live map[uint32]Handle, c uint32) bool {
	for i := range live {
		if i/ChunkSize == c {
			return true
		}
	}
	return false
}

// The table against a model: Alloc takes the slot Free cached (the first
// freed since an Alloc or Take took the cache), else the lowest free
// index, Take the one named, each with a generation newer than every
// earlier one; a Handle finds its record until it is freed and never
// after, however the slot is reused; Current, All and Len agree with the
// model; and with Shrink the chunks in use are no more than the highest
// record needs, or the cached slot.
func TestTableModel(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		tab := Table[uint64]{Shrink: rapid.Bool().Draw(t, "shrink")}
		live := map[uint32]Handle{}
		val := map[Handle]uint64{}
		var dead []Handle
		var lastGen uint32
		next := uint64(1)
		stamp := func(t *rapid.T, h Handle, p *uint64) {
			if h.Gen <= lastGen || h.Gen == 0 {
				t.Fatalf("generation %d after %d: not newer", h.Gen, lastGen)
			}
			lastGen = h.Gen
			*p = next
			live[h.Idx] = h
			val[h] = next
			next++
		}
		low := uint32(0) // every index below it is live
		hot := -1        // the slot Free cached (the first freed since an Alloc or Take took it)
		lowestFree := func() uint32 {
			if hot >= 0 {
				return uint32(hot)
			}
			for {
				if _, ok := live[low]; !ok {
					return low
				}
				low++
			}
		}
		t.Repeat(map[string]func(*rapid.T){
			"alloc": func(t *rapid.T) {
				for range rapid.IntRange(1, ChunkSize+ChunkSize/2).Draw(t, "n") {
					want := lowestFree()
					if g := tab.NextGen(); g != lastGen+1 {
						t.Fatalf("NextGen = %d after %d", g, lastGen)
					}
					h, p, err := tab.Alloc()
					hot = -1
					if err != nil || h.Idx != want {
						t.Fatalf("Alloc = %v, %v; want index %d", h, err, want)
					}
					stamp(t, h, p)
				}
			},
			"take": func(t *rapid.T) {
				idx := rapid.Uint32Range(0, 3*ChunkSize).Draw(t, "idx")
				h, p, err := tab.Take(idx)
				if int(idx) == hot {
					hot = -1
				}
				if _, used := live[idx]; used {
					if !errors.Is(err, ErrInUse) {
						t.Fatalf("Take(%d) of a slot in use = %v, %v", idx, h, err)
					}
					return
				}
				if err != nil || h.Idx != idx {
					t.Fatalf("Take(%d) = %v, %v", idx, h, err)
				}
				stamp(t, h, p)
			},
			"renew": func(t *rapid.T) {
				if len(live) == 0 {
					t.Skip("empty")
				}
				idxs := slices.Sorted(maps.Keys(live)) // drawn from in a fixed order
				old := live[rapid.SampledFrom(idxs).Draw(t, "idx")]
				want := tab.NextGen()
				h, ok := tab.Renew(old)
				if !ok || h.Idx != old.Idx || h.Gen != want || h.Gen <= lastGen {
					t.Fatalf("Renew(%v) = %v, %v; want generation %d after %d", old, h, ok, want, lastGen)
				}
				lastGen = h.Gen
				live[h.Idx] = h
				val[h] = val[old]
				delete(val, old)
				dead = append(dead, old)
				if _, ok := tab.Renew(old); ok {
					t.Fatalf("Renew(%v) of a stale handle = true", old)
				}
			},
			"free": func(t *rapid.T) {
				if len(live) == 0 {
					t.Skip("empty")
				}
				idxs := slices.Sorted(maps.Keys(live)) // drawn from in a fixed order
				for _, i := range rapid.SliceOfNDistinct(rapid.SampledFrom(idxs), 1, -1, rapid.ID).Draw(t, "idxs") {
					h := live[i]
					if !tab.Free(h) {
						t.Fatalf("Free(%v) of a live handle = false", h)
					}
					if tab.Free(h) {
						t.Fatalf("Free(%v) twice = true", h)
					}
					delete(live, i)
					delete(val, h)
					if hot < 0 {
						hot = int(i)
						continue
					}
					low = min(low, i)
					if c := i / ChunkSize; tab.Shrink && c > 0 && uint32(hot)/ChunkSize == c && !chunkLive(live, c) {
						low = min(low, uint32(hot)) // the cached slot alone would keep the chunk
						hot = -1
					}
					if len(dead) == 64 {
						dead = dead[1:]
					}
					dead = append(dead, h)
				}
			},
			"": func(t *rapid.T) {
				if tab.Len() != len(live) {
					t.Fatalf("Len = %d, want %d", tab.Len(), len(live))
				}
				for h, v := range val {
					if h.Idx%7 != 0 && len(val) > 256 {
						continue // a sample: All below sees every record
					}
					p, ok := tab.Lookup(h)
					if !ok || *p != v {
						t.Fatalf("Lookup(%v) = %v; want %d", h, ok, v)
					}
					if ch, cp, ok := tab.Current(h.Idx); !ok || ch != h || cp != p {
						t.Fatalf("Current(%d) = %v, %v; want %v", h.Idx, ch, ok, h)
					}
					if tab.At(h.Idx) != p {
						t.Fatalf("At(%d) is not the record Lookup found", h.Idx)
					}
				}
				for _, h := range dead {
					if _, ok := tab.Lookup(h); ok {
						t.Fatalf("Lookup(%v) of a freed handle found a record", h)
					}
				}
				n := 0
				for h, p := range tab.All() {
					if val[h] != *p {
						t.Fatalf("All yielded %v holding %d, want %d", h, *p, val[h])
					}
					n++
				}
				if n != len(live) {
					t.Fatalf("All yielded %d slots, want %d", n, len(live))
				}
				if tab.Shrink {
					hi := hot // the cached slot keeps its chunk
					for i := range live {
						hi = max(hi, int(i))
					}
					// Chunk 0 stays, and so may the chunks below the highest
					// record (they take records first).
					if need := max(hi/ChunkSize+1, 1); tab.Chunks() > need {
						t.Fatalf("%d chunks for records up to %d", tab.Chunks(), hi)
					}
				}
			},
		})
	})
}

func TestTableErrors(t *testing.T) {
	var tab Table[int]
	if _, _, err := tab.Take(MaxLen); !errors.Is(err, ErrFull) {
		t.Fatalf("Take(MaxLen) = %v, want ErrFull", err)
	}
	if tab.Free(Handle{}) {
		t.Fatal("Free of the zero Handle = true")
	}
	h, _, err := tab.Alloc()
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := tab.Lookup(Handle{Idx: h.Idx}); ok {
		t.Fatal("Lookup of generation 0 found a record")
	}
	if _, ok := tab.Lookup(Handle{Idx: 5 * ChunkSize, Gen: h.Gen}); ok {
		t.Fatal("Lookup past the last chunk found a record")
	}
	if tab.Load(5*ChunkSize) != nil {
		t.Fatal("Load past the last chunk returned a record")
	}
}

// The counter wraps to 1, never 0, and a Reset table keeps counting.
func TestTableGenerationWraps(t *testing.T) {
	var tab Table[int]
	tab.gen = MaxGen - 1
	a, _, _ := tab.Alloc()
	if g := tab.NextGen(); g != 1 {
		t.Fatalf("NextGen after %d = %d, want 1", MaxGen, g)
	}
	b, _, _ := tab.Alloc()
	if a.Gen != MaxGen || b.Gen != 1 {
		t.Fatalf("generations %d, %d; want %d, 1", a.Gen, b.Gen, MaxGen)
	}
	tab.Reset()
	c, _, _ := tab.Alloc()
	if c.Gen != 2 || c.Idx != 0 {
		t.Fatalf("after Reset: %v, want index 0 generation 2", c)
	}
	if _, ok := tab.Lookup(a); ok {
		t.Fatal("a Handle from before Reset found a record")
	}
}

func TestHandlePack(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		h := Handle{Idx: rapid.Uint32Range(0, MaxLen-1).Draw(t, "idx"), Gen: rapid.Uint32Range(1, MaxGen).Draw(t, "gen")}
		v := h.Pack()
		if Unpack(v) != h || v>>63 != 0 || v == 0 {
			t.Fatalf("Pack(%v) = %#x", h, v)
		}
	})
}

// Load on other goroutines while the owner allocates, takes and frees:
// each reader sees the record at its published address, the value the
// owner stored before it published the index (under -race, this is the
// test of the directory's publication).
func TestTableLoadConcurrent(t *testing.T) {
	var tab Table[[2]uint64]
	var mu sync.Mutex
	published := uint32(0) // indexes below it hold their own index, set before
	var wg sync.WaitGroup
	stop := make(chan struct{})
	for range 2 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				select {
				case <-stop:
					return
				default:
				}
				mu.Lock()
				n := published
				mu.Unlock()
				for i := uint32(0); i < n; i += 97 {
					p := tab.Load(i)
					if p == nil {
						t.Errorf("Load(%d) = nil below %d", i, n)
						return
					}
					mu.Lock()
					v := p[0]
					mu.Unlock()
					if v != uint64(i) {
						t.Errorf("Load(%d) holds %d", i, v)
						return
					}
				}
			}
		}()
	}
	for i := range uint32(20 * ChunkSize) {
		h, p, err := tab.Alloc()
		if err != nil || h.Idx != i {
			t.Fatalf("Alloc = %v, %v", h, err)
		}
		mu.Lock()
		p[0] = uint64(i)
		published = i + 1
		mu.Unlock()
	}
	close(stop)
	wg.Wait()
}
