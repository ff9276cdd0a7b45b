//go:build linux

package proptest

import (
	"iter"
	"time"

	"pgregory.net/rapid"

	"github.com/unipoll/unipoll/poll"
	"github.com/unipoll/unipoll/timer"
)

// valueTimer is the Timer the timer kind drives, with int values, in each
// of the ways a Timer keeps its values (timer/values.go): a
// timer.Timer[int] carries each in its wheel entry's key, a Timer of a
// pointer type carries the pointer beside its entry, and any other (here
// a Timer[any]) keeps it in the Timer's slab. The state machine draws one
// per Timer, so the three ways answer to the same model.
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

// newValueTimer makes a Timer of one of the three ways, as t draws.
func newValueTimer(t *rapid.T, opts ...timer.Option) (valueTimer, error) {
	switch rapid.SampledFrom([]string{"key", "pointer", "slab"}).Draw(t, "where the timer's values travel") {
	case "pointer":
		tm, err := timer.New[*int](opts...)
		if err != nil {
			return nil, err
		}
		return boxedTimer{tm}, nil
	case "slab":
		tm, err := timer.New[any](opts...)
		if err != nil {
			return nil, err
		}
		return slabTimer{tm}, nil
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

// slabTimer is a Timer of interface values, kept in its slab, seen as int
// values.
type slabTimer struct{ *timer.Timer[any] }

func (a slabTimer) Set(d time.Duration, v int) (timer.Timeout, error) {
	return a.Timer.Set(d, v)
}

func (a slabTimer) Cancel(to timer.Timeout) (int, bool) { return unany(a.Timer.Cancel(to)) }

func (a slabTimer) TryRecv() (int, bool) { return unany(a.Timer.TryRecv()) }

func (a slabTimer) Drain() iter.Seq[int] {
	return func(yield func(int) bool) {
		for v := range a.Timer.Drain() {
			n, _ := unany(v, true)
			if !yield(n) {
				return
			}
		}
	}
}

// unany reads an interface value; one that is not an int (none returned
// gives nil) reads as -1, which no timeout of the model carries.
func unany(v any, ok bool) (int, bool) {
	n, isInt := v.(int)
	if !isInt {
		return -1, ok
	}
	return n, ok
}
