package wheel

// keyRing is a FIFO of keys, grown by doubling, that gives its memory back
// once it is empty and large (trim).
type keyRing struct {
	buf  []uint64
	head int
	n    int
}

func (r *keyRing) len() int { return r.n }

func (r *keyRing) push(k uint64) {
	if r.n == len(r.buf) {
		buf := make([]uint64, max(16, 2*len(r.buf)))
		for i := range r.n {
			buf[i] = r.buf[(r.head+i)&(len(r.buf)-1)]
		}
		r.buf, r.head = buf, 0
	}
	r.buf[(r.head+r.n)&(len(r.buf)-1)] = k
	r.n++
}

func (r *keyRing) pop() (uint64, bool) {
	if r.n == 0 {
		return 0, false
	}
	k := r.buf[r.head]
	r.head = (r.head + 1) & (len(r.buf) - 1)
	r.n--
	return k, true
}

// keyRingKeep is the largest ring kept while it is empty.
const keyRingKeep = 1024

func (r *keyRing) trim() {
	if r.n == 0 && len(r.buf) > keyRingKeep {
		*r = keyRing{}
	}
}
