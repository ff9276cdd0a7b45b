//go:build linux

package proptest

import (
	"fmt"
	"strings"

	"pgregory.net/rapid"

	"github.com/unipoll/unipoll/channel"
)

// The receives of the channel kind: TryRecv, and Drain, whose loop stops
// early at a drawn value of its first batch (handing the rest of that
// batch back to the Receiver) or runs until the channel is empty. Each
// value received must be one the model has pending and may come next;
// then the room the receive made lets blocked Sends go on (freed, in
// model_channel_blocked.go), every one of them there is room for, with no
// further receive.

func chanTryRecv(t *rapid.T, w *world, s *src) {
	im := s.impl.(*chanImpl)
	v, err := im.rx.TryRecv()
	w.logTimed(fmt.Sprintf("%s.TryRecv() = %s, %v", s.label, im.sends.show(v), err), im.sends.note(v))
	switch {
	case len(im.pend.vals) > 0:
		w.expectErr(t, "TryRecv", err, nil)
		next := im.pend.next(&im.sends)
		if !im.pend.take(v) {
			w.fatalf(t, "TryRecv returned %s, want %s", im.sends.show(v), next)
		}
		im.emptied()
		// TryRecv looks ahead for the next value, and clears Readable if
		// there is none, before it gives the room back: a Send it lets go
		// on sets Readable again, a new edge.
		im.freed(t, w, s, "TryRecv", true)
	case im.disconnected:
		w.expectErr(t, "TryRecv on a drained, disconnected channel", err, channel.ErrDisconnected)
	default:
		w.expectErr(t, "TryRecv on an empty channel", err, channel.ErrEmpty)
	}
}

// chanDrain drains the Receiver, or stops the Drain's loop after a drawn
// number of values of its first batch: that batch is every value pending
// (up to chanDrainBatch), so exactly the rest of it is handed back. While
// Sends are blocked it always stops so (model_channel_blocked.go).
func chanDrain(t *rapid.T, w *world, s *src) {
	im := s.impl.(*chanImpl)
	batch := min(len(im.pend.vals), chanDrainBatch)
	stop := 0
	if batch > 0 && (len(im.sends.list) > 0 || rapid.Bool().Draw(t, "stop the Drain's loop early")) {
		stop = rapid.IntRange(1, batch).Draw(t, "values before it stops")
	}
	var got []int
	for v := range im.rx.Drain() {
		got = append(got, v)
		if len(got) == stop {
			break
		}
	}
	shown := make([]string, len(got))
	for i, v := range got {
		shown[i] = im.sends.show(v)
	}
	line := fmt.Sprintf("%s.Drain() = [%s]", s.label, strings.Join(shown, ", "))
	if stop > 0 {
		line += fmt.Sprintf(", stopped there (%d of its batch handed back)", batch-stop)
		totalsChan.stopped.Add(1)
	}
	w.logTimed(line, im.sends.note(got...))
	for i, v := range got {
		next := im.pend.next(&im.sends)
		if len(im.pend.vals) == 0 || !im.pend.take(v) {
			w.fatalf(t, "Drain yielded %s as its value %d, want %s", im.sends.show(v), i+1, next)
		}
	}
	switch {
	case stop > 0 && len(got) != stop:
		w.fatalf(t, "Drain stopped after %d values, want %d", len(got), stop)
	case stop > 0:
		im.pend.given = batch - stop
	case len(im.pend.vals) > 0:
		w.fatalf(t, "Drain returned with %d values pending: %v", len(im.pend.vals), &im.pend)
	}
	im.emptied()
	// Stopped at the last value pending, the Drain looks ahead before it
	// clears Readable, and may find a value of a Send it let go on: then
	// it does not clear it, and their arrival is no new edge.
	im.freed(t, w, s, "Drain", false)
}
