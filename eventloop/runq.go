package eventloop

import (
	"sort"
	"sync"
	"sync/atomic"

	"github.com/unipoll/unipoll/internal/base/ring"
	"github.com/unipoll/unipoll/poll"
)

// The run queue holds the entries that have something to be called for,
// by priority: one first-in first-out ring per priority level, the
// highest level served first. Routing an event marks its entry queued and
// merges the readiness into entry.ready, so an entry is queued at most
// once per incarnation however many events arrive before its turn.
//
// Owner: with one worker, the goroutine in Run; with several, whoever
// holds Loop.mu. Only the owner touches the rings and the entries' ready,
// queued and again fields. When no Run is active, Loop.mu makes its holder
// the owner (Remove and Close finish entries then).
//
// Items carry the generation they were queued for: an entry freed and
// reused while an item of its earlier incarnation waits is skipped when
// that item comes up (entry invariant 1), and free clears queued, so the
// new incarnation queues its own item.
//
// The one-worker Loop skips the queue when it would change nothing
// (dispatchBatch): with the queue empty, one priority level and a batch
// within MaxEventsPerIteration, the queue would hand the batch's entries
// back in arrival order, so they are claimed straight from the batch,
// with the same checks route makes; once the dispatch budget is spent,
// the rest of the batch is routed into the queue for the next iteration.

// item is one queued entry.
type item struct {
	e   *entry
	gen uint32
}

// level is one priority's ring.
type level struct {
	prio int
	q    ring.Ring[item]
}

func (lv *level) push(it item) { lv.q.Push(it) }

func (lv *level) pop() item {
	it, _ := lv.q.Pop()
	return it
}

// levels is the set of priority levels, highest first. Add creates a
// level the first time a priority is used, copying the slice (the owner
// reads it without a lock); levels are never dropped, so an entry's lvl
// pointer stays valid.
type levels struct {
	mu  sync.Mutex
	cur atomic.Pointer[[]*level]
	def *level // priority 0
}

func (ls *levels) init() {
	ls.def = &level{}
	s := []*level{ls.def}
	ls.cur.Store(&s)
}

// single reports whether priority 0 is the only level: no source has
// asked for another priority.
func (ls *levels) single() bool { return len(*ls.cur.Load()) == 1 }

// get returns the level for prio, creating it if needed.
func (ls *levels) get(prio int) *level {
	if prio == 0 {
		return ls.def
	}
	ls.mu.Lock()
	defer ls.mu.Unlock()
	old := *ls.cur.Load()
	i := sort.Search(len(old), func(i int) bool { return old[i].prio <= prio })
	if i < len(old) && old[i].prio == prio {
		return old[i]
	}
	lv := &level{prio: prio}
	s := make([]*level, 0, len(old)+1)
	s = append(s, old[:i]...)
	s = append(s, lv)
	s = append(s, old[i:]...)
	ls.cur.Store(&s)
	return lv
}

// runq is the owner's view: the levels and how many items they hold.
type runq struct {
	ls *levels
	n  int
}

// enqueue queues e (of generation gen) with readiness r, or merges r into
// its queued item. It is the routing step of invariant 1: the caller has
// checked that gen is current.
func (q *runq) enqueue(e *entry, gen uint32, r poll.Ready) {
	e.ready |= r
	if e.queued {
		return
	}
	e.queued = true
	e.lvl.push(item{e, gen})
	q.n++
}

// pop takes the first item of the highest non-empty level.
func (q *runq) pop() item {
	for _, lv := range *q.ls.cur.Load() {
		if lv.q.Len() > 0 {
			q.n--
			return lv.pop()
		}
	}
	panic("eventloop: run queue count says non-empty but every level is empty")
}
