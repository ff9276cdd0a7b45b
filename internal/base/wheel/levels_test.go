package wheel

import (
	"errors"
	"math"
	"math/bits"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"pgregory.net/rapid"
)

// White-box tests of the hierarchical wheel with a clock the test moves
// (Advance), so that time.Since(origin) jumps forward at once.

var errClosed = errors.New("closed")

// newTestWheel returns a wheel of tick and slots with one Queue owner of
// resolution res, whose readiness goes nowhere.
func newTestWheel(t require.TestingT, tick time.Duration, slots int, res time.Duration) (*Wheel, uint16) {
	w := new(Wheel)
	w.Init(tick, slots, func() {}, func(uint64) {})
	id, err := w.newOwner(res, false, func(bool) {}, errClosed)
	require.NoError(t, err)
	return w, id
}

// add schedules a deadline d from now for owner id.
func (w *Wheel) add(id uint16, key uint64, d time.Duration) (ID, int64) {
	w.mu.Lock()
	defer w.mu.Unlock()
	dl, now := w.DeadlineAfter(d)
	eid, _, err := w.schedule(id, key, dl, now)
	if err != nil {
		panic(err) // 2^31 entries: not in a test
	}
	return eid, dl
}

// take is Queue.TryRecv for owner id.
func (w *Wheel) take(id uint16) (uint64, bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	key, _, ok := w.takeExpired(id)
	return key, ok
}

// remove is Queue.Remove for owner id.
func (w *Wheel) remove(id uint16, eid ID) (uint64, bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.cancel(id, eid)
}

// The wheel against a model, on small and normal levels: every deadline
// passes exactly once, never before its tick and never after the expire
// that reaches its tick, Next hands them out in deadline order, Remove
// takes only what has not passed, and the wheel's structure stays true at
// every step. Time moves in small steps, in jumps past whole levels, and
// not at all.
func TestWheelLevelsModel(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		slots := 1 << rapid.IntRange(1, 6).Draw(t, "log2 slots")
		tick := time.Millisecond
		res := rapid.SampledFrom([]time.Duration{0, 3 * time.Millisecond, 10 * time.Millisecond}).Draw(t, "resolution")
		w, id := newTestWheel(t, tick, slots, res)

		type pending struct {
			tid      ID
			deadline int64
		}
		live := map[uint64]pending{} // key -> not yet passed or not yet taken
		passed := map[uint64]bool{}  // passed, not yet taken by next
		nextKey := uint64(1)
		take := func(t *rapid.T) {
			var last int64 = math.MinInt64
			for {
				key, ok := w.take(id)
				if !ok {
					break
				}
				dl := live[key].deadline
				if !passed[key] {
					t.Fatalf("key %d handed out but the model has it not passed", key)
				}
				if dl < last {
					t.Fatalf("key %d (deadline %d) after one with deadline %d: not in deadline order", key, dl, last)
				}
				last = dl
				delete(passed, key)
				delete(live, key)
			}
		}
		t.Repeat(map[string]func(*rapid.T){
			"add": func(t *rapid.T) {
				var d time.Duration
				switch rapid.IntRange(0, 3).Draw(t, "range") {
				case 0:
					d = time.Duration(rapid.IntRange(0, 3*slots).Draw(t, "ticks")) * tick
				case 1:
					d = time.Duration(rapid.Int64Range(0, int64(slots*slots*slots)*int64(tick)).Draw(t, "ns"))
				case 2:
					d = time.Duration(rapid.Int64Range(0, 1<<40).Draw(t, "ns far"))
				default:
					d = math.MaxInt64 // saturates
				}
				eid, dl := w.add(id, nextKey, d)
				live[nextKey] = pending{eid, dl}
				nextKey++
			},
			"remove": func(t *rapid.T) {
				if len(live) == 0 {
					t.Skip("nothing")
				}
				keys := slices.Sorted(func(yield func(uint64) bool) {
					for k := range live {
						if !yield(k) {
							return
						}
					}
				})
				k := rapid.SampledFrom(keys).Draw(t, "key")
				tid := live[k].tid
				got, ok := w.remove(id, tid)
				if passed[k] {
					if ok {
						t.Fatalf("Remove of key %d, which has passed, succeeded", k)
					}
					return
				}
				if !ok || got != k {
					t.Fatalf("Remove of pending key %d = %d, %v", k, got, ok)
				}
				delete(live, k)
				if _, ok := w.remove(id, tid); ok {
					t.Fatalf("second Remove of key %d succeeded", k)
				}
			},
			"advance": func(t *rapid.T) {
				var d time.Duration
				if rapid.Bool().Draw(t, "jump") {
					d = time.Duration(rapid.Int64Range(0, int64(slots)*int64(slots)*int64(slots)*int64(slots)).Draw(t, "jump ticks")) * tick
				} else {
					d = time.Duration(rapid.IntRange(0, 2*slots).Draw(t, "ticks")) * tick
				}
				w.Advance(d)
			},
			"expire": func(t *rapid.T) {
				w.Expire()
				w.mu.Lock()
				cur := w.cur
				r := &w.owners[id].expired
				for i := range r.Len() {
					k := r.At(i)
					if due := w.dueOf(&entry{deadline: live[k].deadline, owner: id}); due > cur {
						w.mu.Unlock()
						t.Fatalf("key %d passed at tick %d, before its due tick %d", k, cur, due)
					}
					passed[k] = true
				}
				w.mu.Unlock()
				for k, p := range live {
					due := w.dueOf(&entry{deadline: p.deadline, owner: id})
					if !passed[k] && due <= cur {
						t.Fatalf("key %d due at tick %d has not passed at tick %d", k, due, cur)
					}
				}
				take(t)
			},
			"": func(t *rapid.T) {
				require.NoError(t, w.Check())
				w.mu.Lock()
				defer w.mu.Unlock()
				o := &w.owners[id]
				if got, want := o.refs+o.expired.Len(), len(live); got != want {
					t.Fatalf("owner holds %d entries and %d expired keys, model %d", o.refs, o.expired.Len(), want)
				}
			},
		})
	})
}

// A tick costs what expires, not what is pending: with a million deadlines
// far away, bringing the wheel forward tick by tick touches only the few
// near ones (Wheel.taken counts the entries expire takes from slots).
func TestWheelTickCostIsWhatExpires(t *testing.T) {
	w, id := newTestWheel(t, time.Millisecond, MaxSlots, 0)
	const far, near = 1_000_000, 100
	w.mu.Lock()
	for i := range far {
		dl, now := w.DeadlineAfter(time.Hour + time.Duration(i)*time.Microsecond)
		w.schedule(id, uint64(i), dl, now)
	}
	w.mu.Unlock()
	// Setting a million deadlines takes a while (seconds, under -race on a
	// busy machine): bring the wheel to the present first, so that the near
	// ones are placed relative to now. The far ones are untouched by it.
	w.Expire()
	for i := range near {
		w.add(id, uint64(far+i), time.Duration(i+1)*time.Millisecond)
	}
	for range near + 1 {
		w.Advance(time.Millisecond)
		w.Expire()
	}
	require.Equal(t, near, w.owners[id].expired.Len(), "the near deadlines passed")
	require.Equal(t, int64(far), w.count.Load(), "the far ones are all still pending")
	// Each near deadline is taken from a slot once or twice (level 1, then
	// level 0); a wheel that walked its pending entries would take them a
	// million at a time.
	require.LessOrEqual(t, w.taken, uint64(2*near), "entries taken from slots in %d ticks with %d pending", near+1, far)
	// The far deadlines sit in a few slots of high levels, untouched.
	w.mu.Lock()
	defer w.mu.Unlock()
	occupied := 0
	for _, lv := range w.levels[2:] {
		occupied += bits.OnesCount64(lv.occupied)
	}
	require.LessOrEqual(t, occupied, 4)
}
