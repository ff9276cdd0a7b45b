// Package eventloop is the thin dispatcher on top of a poll.Poll: a Loop
// calls a handler per source as its events come, in priority order, one
// call at a time per source, with what real servers need around it:
// actions that call again, disarm or remove a source, safe removal while
// another goroutine runs the handler, fairness between sources, work
// posted from other goroutines and several workers on one Loop. Buffered
// connections and Groups of Loops are package netloop's, on top of this
// one's exported API.
//
// # The Loop
//
//   - New(Config) opens a Loop. Loop.Poll is its Poll, for sources the
//     caller registers directly: their events go to Run's Handler
//     (HandlerFunc adapts a function; a Ticker also hears the end of each
//     iteration).
//   - Loop.Run(ctx, h) serves it until Shutdown, ctx's end or Close;
//     Loop.RunOnce makes one iteration on the caller's goroutine, for a
//     program with a loop of its own.
//   - Loop.Shutdown stops Run, from any goroutine or a handler;
//     Loop.Close releases everything the Loop made.
//   - Loop.Stats counts iterations, calls, posted functions, stale and
//     dropped events, and the calls per worker.
//
// # Sources and their handlers
//
//   - Loop.Add(src, interest, opts, h, ...AddOption) registers a source
//     under a token the Loop chooses. h is a SourceHandler (SourceFunc
//     adapts a function); its Ready returns an Action: Keep, Again (call
//     again after the others, and re-enable a Oneshot or disarmed source),
//     Disarm or Remove. Priority is the AddOption that orders the calls;
//     OnToken hands the token over before the first call.
//   - Loop.Rearm, Loop.Disarm, Loop.Remove, Loop.SetInterest, Loop.SetMode
//     (Edge or Level) and Loop.Trigger (a call with no event) act from any
//     goroutine. After Remove returns the handler
//     is not called again, but for a call already in progress; its
//     Remover.Removed then runs once, after the last call: the place to
//     close the source's descriptor.
//   - Tokens carry a generation (see IsLoopToken): an event, a queued call
//     or a stale token of a removed source never reaches a source that
//     took its place, also one that reuses its descriptor number.
//
// # Fairness and priorities
//
// Config.MaxDispatchPerIteration bounds the handler calls and posted
// functions between two Poll calls, so that a flood of posts, an
// always-ready source or a handler that keeps asking for Again cannot
// starve the others. Config.MaxEventsPerIteration caps the calls for
// source events per iteration, which makes priority strict across
// iterations: a source that did not get its turn waits, none is lost.
//
// # Work from other goroutines, and later
//
// Loop.Post(f) runs f on the Loop, in order per poster: the posted
// functions travel through a channel package Receiver that is one of the
// Loop's own sources, so posting to a busy Loop costs no system call.
// Loop.AfterFunc(d, f) runs f after d, from a timer package Timer on the
// Poll's own timing wheel; its cancel reports whether it stopped f.
// Loop.WakePollers wakes the workers as an event would.
//
// # Workers
//
// Config.Workers serves one Loop with several goroutines, leader and
// followers: one polls, the others run handlers, and the leader's role
// goes to the worker that has waited longest, so that each takes a fair
// share; a handler still never runs concurrently with itself. One
// dispatch engine serves one worker and several (engine.go).
//
// # For layers on top
//
// Loop.ReadBuffer lends a handler its worker's read buffer for the call;
// Loop.Value keeps a layer's state once per Loop. Package netloop is
// built on them and the rest of this API, as any other layer can be.
//
// # Errors
//
// Errors are sentinels matched with errors.Is: ErrClosed,
// ErrInvalidArgument (both poll's), ErrUnknownToken, ErrRunning,
// ErrTableFull. Nil and zero values return errors and never panic.
package eventloop
