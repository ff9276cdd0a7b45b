package eventloop

import (
	"fmt"
	"sync"
	"sync/atomic"

	"github.com/unipoll/unipoll/poll"
)

// Tokens. A token the Loop hands out has bit 63 set, the entry's
// generation in bits 32-62 and its index in the table in bits 0-31. Events
// whose token has bit 63 clear belong to sources the caller registered on
// Loop.Poll itself and go to Run's Handler.
const (
	loopBit = uint64(1) << 63
	idxMask = uint64(1)<<32 - 1
)

// IsLoopToken reports whether t has the form of a token the Loop hands out
// to its sources (bit 63 set). Sources registered directly on Loop.Poll
// must use tokens for which it is false, so that their events go to Run's
// Handler.
func IsLoopToken(t poll.Token) bool { return uint64(t)&loopBit != 0 }

func makeToken(idx, gen uint32) poll.Token {
	return poll.Token(loopBit | (uint64(gen)&genMask)<<genShift | uint64(idx))
}

func splitToken(t poll.Token) (idx, gen uint32) {
	return uint32(uint64(t) & idxMask), uint32(uint64(t) >> genShift & genMask)
}

// The table holds entries in pages that never move, so a *entry stays
// valid while the table grows. Readers (event routing, Remove from any
// goroutine) load the directory without a lock; Add and free take mu.
//
// It is not internal/base/table, the index-and-generation table of the
// Poll's descriptors and the wheel, because an entry's generation is not
// the table's: it lives in the entry's state word (entry.go), where the
// claim CAS checks it together with the running and removed bits, from
// any worker. A table that kept the generation beside the slot would
// split that one atomic decision in two.
const (
	pageBits = 8
	pageSize = 1 << pageBits
	// maxEntries keeps indexes below 2^31: together with the generation
	// they then never form poll's reserved token.
	maxEntries = 1 << 31
)

type page [pageSize]entry

type table struct {
	dir atomic.Pointer[[]*page]

	mu   sync.Mutex
	free []uint32 // indexes of freed entries, reused first-in first-out
	head int      // free[head:] are free
	next uint32   // indexes below next have been handed out at least once
	live int      // entries in use

	// many: live > aheadFrom, read without mu by the dispatch (ahead.go),
	// where a stale answer only costs or skips a few hints.
	many atomic.Bool
}

// get returns the entry at idx, or nil if the table never reached it.
func (t *table) get(idx uint32) *entry {
	d := t.dir.Load()
	if d == nil {
		return nil
	}
	p := idx >> pageBits
	if int(p) >= len(*d) {
		return nil
	}
	return &(*d)[p][idx&(pageSize-1)]
}

// lookup returns the entry a token names and the token's generation, or
// nil if t is not a Loop token or names no entry.
func (t *table) lookup(tok poll.Token) (*entry, uint32) {
	if !IsLoopToken(tok) {
		return nil, 0
	}
	idx, gen := splitToken(tok)
	return t.get(idx), gen
}

// alloc takes an unused entry. Freed entries are reused oldest first, so
// that a generation wraps (after 2^31 reuses of one entry) as late as
// possible.
func (t *table) alloc() (*entry, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.head < len(t.free) {
		idx := t.free[t.head]
		t.head++
		if t.head == len(t.free) {
			t.free, t.head = t.free[:0], 0
		}
		t.live++
		t.many.Store(t.live > aheadFrom)
		return t.get(idx), nil
	}
	if t.next >= maxEntries {
		return nil, fmt.Errorf("%w (%d)", ErrTableFull, t.live)
	}
	idx := t.next
	if t.get(idx) == nil {
		var d []*page
		if old := t.dir.Load(); old != nil {
			d = append(d, *old...)
		}
		d = append(d, new(page))
		for i := range d[len(d)-1] {
			d[len(d)-1][i].idx = uint32(len(d)-1)<<pageBits | uint32(i)
		}
		t.dir.Store(&d)
	}
	t.next++
	t.live++
	t.many.Store(t.live > aheadFrom)
	return t.get(idx), nil
}

// release returns an entry's index for reuse; its generation has already
// moved on (free).
func (t *table) release(e *entry) {
	t.mu.Lock()
	if t.head > 0 && t.head >= len(t.free)/2 {
		n := copy(t.free, t.free[t.head:])
		t.free, t.head = t.free[:n], 0
	}
	t.free = append(t.free, e.idx)
	t.live--
	t.many.Store(t.live > aheadFrom)
	t.mu.Unlock()
}

// count is the number of entries in use.
func (t *table) count() int {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.live
}

// each calls f for every entry handed out so far.
func (t *table) each(f func(e *entry)) {
	t.mu.Lock()
	n := t.next
	t.mu.Unlock()
	for i := range n {
		f(t.get(i))
	}
}
