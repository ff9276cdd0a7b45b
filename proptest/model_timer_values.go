//go:build linux

package proptest

import (
	"iter"
	"time"

	"pgregory.net/rapid"

	"github.com/unipoll/unipoll/poll"
	"github.com/unipoll/unipoll/timer"
)

// valueTimer is the Timer the timer kind drives, with int values, in one
// of the ways a Timer keeps its values (timer/values.go): a
// timer.Timer[int] carries each in its wheel entry's key, a Timer of a
// pointer type carries the pointer beside its entry. The third way, the
// Timer's slab (interfaces, slices, larger values), is not drawn here:
// timer's own tests cover it. The state machine draws one per Timer, so
// the ways drawn answer to the same model.
type valueTimer interface {
	poll.Evented
	Set(d time.Duration, v int) (timer.Timeout, error)
	Cancel(timer.Timeout) (int, bool)
	TryRecv() (int, bool)
	Drain() iter.Seq[int]
	Len() int
	Stats() timer.Stats
	Close() error
}

// newValueTimer makes a Timer of either kind, as t draws.
func newValueTimer(t *rapid.T, opts ...timer.Option) (valueTimer, error) {
	if rapid.Bool().Draw(t, "timer values beside their entries (pointers)") {
		tm, err := timer.New[*int](opts...)
		if err != nil {
			return nil, err
		}
		return boxedTimer{tm}, nil
	}
	return timer.New[int](opts...)
}

// boxedTimer is a Timer whose values hold a pointer, seen as int values.
type boxedTimer struct{ *timer.Timer[*int] }

func (b boxedTimer) Set(d time.Duration, v int) (timer.Timeout, error) {
	return b.Timer.Set(d, &v)
}

func (b boxedTimer) Cancel(to timer.Timeout) (int, bool) { return unbox(b.Timer.Cancel(to)) }

func (b boxedTimer) TryRecv() (int, bool) { return unbox(b.Timer.TryRecv()) }

func (b boxedTimer) Drain() iter.Seq[int] {
	return func(yield func(int) bool) {
		for p := range b.Timer.Drain() {
			if !yield(*p) {
				return
			}
		}
	}
}

// unbox reads a boxed value; a nil one (none returned) reads as -1, which
// no timeout of the model carries.
func unbox(p *int, ok bool) (int, bool) {
	if p == nil {
		return -1, ok
	}
	return *p, ok
}
