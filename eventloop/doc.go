// Package eventloop is the thin dispatcher on top of a poll.Poll: a Loop
// calls a handler per source as its events come, in priority order, one
// call at a time per source, with the actions a real server needs (rearm,
// disarm, remove, safely while another goroutine runs the handler),
// functions posted from other goroutines, and several workers serving
// one Loop.
//
// # The Loop
//
//   - New(Config) opens a Loop; Loop.Poll is its Poll, for sources the
//     caller registers directly (their events go to Run's Handler).
//   - Loop.Run(ctx, h) serves it until Shutdown, ctx's end or Close;
//     Handler, Ticker and HandlerFunc are what Run calls.
//   - Loop.Shutdown stops Run from any goroutine or handler; Loop.Close
//     releases everything the Loop made.
//   - Loop.Stats counts iterations, calls, posted functions, stale events.
//
// # Sources and their handlers
//
//   - Loop.Add(src, interest, opts, h, ...AddOption) registers a source
//     under a token the Loop chooses; SourceHandler (or SourceFunc) is
//     called for its events and returns an Action: Keep, Rearm, Disarm or
//     Remove. Priority is the AddOption that orders handlers.
//   - Loop.Rearm, Loop.Disarm and Loop.Remove do the same from any
//     goroutine. Remover's Removed runs once the source has left the Loop
//     and its last call has returned: the place to close a descriptor.
//   - Tokens carry a generation (IsLoopToken), so an event, a queued call
//     or a stale token of a removed source never reaches a source that
//     took its place, also one that reuses its descriptor number.
//
// # Work from other goroutines
//
//   - Loop.Post(f) runs f on the Loop, in order per poster (a channel
//     package Receiver is one of the Loop's sources).
//   - Loop.WakePollers wakes the workers as an event would.
//
// # Fairness and priorities
//
// Config.MaxDispatchPerIteration bounds handler calls and posted
// functions between two Poll calls, so a flood of posts, an always-ready
// source or a handler that keeps asking for Rearm cannot starve the
// others; Config.MaxEventsPerIteration caps source events per iteration,
// which makes priority strict across iterations.
//
// # Workers
//
// Config.Workers > 1 serves one Loop with several goroutines, leader and
// followers: one polls at a time, the others run handlers; idle workers
// are woken first in, first out, so the load spreads over all of them.
// A handler still never runs concurrently with itself, and Remove keeps
// its promise.
package eventloop
