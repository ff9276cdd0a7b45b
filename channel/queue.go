package channel

// Queue is the storage between the Senders and the Receiver of a channel.
// New and NewBounded use a built-in segmented queue; NewWithQueue takes one
// of the caller's, for example a priority queue or one with a different
// memory policy.
//
// The channel calls Push from any number of goroutines at once (every Send),
// and Pop and Len from one goroutine at a time (the Receiver serialises
// them), possibly while Pushes are running. A Queue belongs to one channel.
//
// The channel's readiness accounting needs one promise from Pop beyond "it
// returns what was pushed": once every Push has returned, Pop returns every
// value not yet popped. Pop may return false
// while a Push is still running, even for values whose own Push has
// returned (a queue that keeps one order across producers may have to wait
// for the slot of a slower producer); the Sender whose Push finishes last
// makes the Receiver readable again.
type Queue[T any] interface {
	// Push appends v. It must not block for long: it runs inside Send.
	Push(v T)
	// Pop removes and returns a value, or reports false if it has none to
	// give now (see above).
	Pop() (v T, ok bool)
	// Len is the number of values pushed and not yet popped; a Push in
	// progress may or may not be counted.
	Len() int
}
