package timer

import (
	"container/heap"
	"sync"
	"testing"
	"time"
)

// The two baselines issue 27 sets Set+Cancel against, measured in the same
// run as BenchmarkSetCancel: one reading of the monotonic clock, the one a
// Set makes (time.Since of a fixed origin, which is the runtime's nanotime
// and a subtraction), and the queue a Go program writes by hand, a
// container/heap behind a mutex, Set then Cancel of one item.

func BenchmarkClockRead(b *testing.B) {
	b.ReportAllocs()
	origin := time.Now()
	var sink time.Duration
	for range b.N {
		sink += time.Since(origin)
	}
	clockSink = sink
}

var clockSink time.Duration

func BenchmarkHeapSetCancel(b *testing.B) {
	b.ReportAllocs()
	var q heapQueue
	for i := range b.N {
		it := q.set(time.Hour, i)
		if !q.cancel(it) {
			b.Fatal("cancel found nothing")
		}
	}
}

// heapQueue is the hand-written timer queue (bench's timers scenario has
// the same): a binary heap by deadline, each item knowing its index so that
// cancel is heap.Remove, guarded by a mutex as a Set and a Cancel from any
// goroutine need.
type heapQueue struct {
	mu    sync.Mutex
	items heapItems
}

type heapItem struct {
	when  time.Time
	value int
	index int // -1 once it left the heap
}

func (q *heapQueue) set(d time.Duration, v int) *heapItem {
	it := &heapItem{when: time.Now().Add(d), value: v}
	q.mu.Lock()
	heap.Push(&q.items, it)
	q.mu.Unlock()
	return it
}

func (q *heapQueue) cancel(it *heapItem) bool {
	q.mu.Lock()
	defer q.mu.Unlock()
	if it.index < 0 {
		return false
	}
	heap.Remove(&q.items, it.index)
	return true
}

type heapItems []*heapItem

func (h heapItems) Len() int           { return len(h) }
func (h heapItems) Less(i, j int) bool { return h[i].when.Before(h[j].when) }
func (h heapItems) Swap(i, j int) {
	h[i], h[j] = h[j], h[i]
	h[i].index, h[j].index = i, j
}
func (h *heapItems) Push(x any) {
	it := x.(*heapItem)
	it.index = len(*h)
	*h = append(*h, it)
}
func (h *heapItems) Pop() any {
	old := *h
	it := old[len(old)-1]
	old[len(old)-1] = nil
	it.index = -1
	*h = old[:len(old)-1]
	return it
}
