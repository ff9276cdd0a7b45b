package table

import "math/bits"

// The owner's bookkeeping of chunks: which exist, which can take a
// record, and the directory that Load reads.

// extend appends chunk index ci (== len(chunks)). Without Shrink the
// chunk is allocated at once, so that the directory has no nil chunk for
// Take to fill in place under a reader's eyes.
func (t *Table[E]) extend(ci int) {
	t.chunks = append(t.chunks, nil)
	t.meta = append(t.meta, chunkMeta{})
	t.setOpen(ci, true)
	if !t.Shrink {
		t.fill(ci)
	}
}

// fill gives the nil chunk ci its memory, every slot free, and publishes
// it to Load.
func (t *Table[E]) fill(ci int) {
	c := t.spare
	t.spare = nil
	if c == nil {
		c = new(chunk[E])
	}
	t.chunks[ci] = c
	m := &t.meta[ci]
	for i := range m.free {
		m.free[i] = ^uint64(0)
	}
	m.used, m.hint = 0, 0
	if !t.Shrink {
		// chunks[:ci] are published and never change; appending in place
		// writes only past the length readers of the old directory see.
		d := t.chunks
		t.dir.Store(&d)
	}
}

// releaseChunk gives chunk ci's memory back: to the spare, or to the garbage
// collector if there is a spare already. Only with Shrink; chunk 0 never.
func (t *Table[E]) releaseChunk(ci int) {
	if t.spare == nil {
		t.spare = t.chunks[ci]
	}
	t.chunks[ci] = nil
	for len(t.chunks) > 0 && t.chunks[len(t.chunks)-1] == nil {
		last := len(t.chunks) - 1
		t.setOpen(last, false)
		t.chunks = t.chunks[:last]
		t.meta = t.meta[:last]
	}
	if len(t.chunks) < cap(t.chunks)/4 {
		t.chunks = append([]*chunk[E](nil), t.chunks...)
		t.meta = append([]chunkMeta(nil), t.meta...)
		t.open = append([]uint64(nil), t.open[:(len(t.chunks)+63)/64]...)
	}
}

// firstOpen returns the lowest chunk that can take a record, or
// len(chunks) if none can.
func (t *Table[E]) firstOpen() int {
	for w, word := range t.open {
		if word != 0 {
			return w<<6 | bits.TrailingZeros64(word)
		}
	}
	return len(t.chunks)
}

func (t *Table[E]) setOpen(ci int, open bool) {
	w := ci >> 6
	for w >= len(t.open) {
		t.open = append(t.open, 0)
	}
	if open {
		t.open[w] |= 1 << (ci & 63)
	} else {
		t.open[w] &^= 1 << (ci & 63)
	}
}
