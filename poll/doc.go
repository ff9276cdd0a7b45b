// Package poll is the core of unipoll: one Poll for everything a Go program
// waits on.
//
// Descriptors (Fd, and the socket package's types) are watched through the
// operating system's selector: epoll on Linux, kqueue on the BSDs and
// darwin, poll(2) on every unix. User-space sources (Registration, and the
// channel, timer, signal and child sources built on it) are made ready from
// any goroutine through a lock-free readiness queue, or after a delay
// through the Poll's hierarchical timing wheel. Both kinds register the
// same way, with a Token, an interest set (Ready) and a trigger mode
// (PollOpt), and come back from the same Poll call as Events.
//
// The API, by what it is for:
//
//   - The Poll: New, NewWithConfig (Config, EnvBackend); Poll.Poll with an
//     Events buffer (NewEvents; Event, Events.All); Poll.Close, Closed,
//     Stats, Backend.
//   - Registering: Poll.Register, Reregister, Deregister of an Evented,
//     with a Token (ReservedToken aside; one per source, which a
//     unipoll_debug build checks: Stats.SharedTokens), an interest
//     (Readable, Writable, Error, Hup, Priority) and a mode (Edge, Level,
//     Oneshot).
//   - Descriptors: Fd, and Fd.Drained for the rule under Edge.
//   - User-space readiness: NewRegistration; SetReadiness.SetReadiness,
//     UnsetReadiness, Readiness, DelayReadiness; Registration.Close.
//   - Deadlines: TimerQueue (NewTimerQueue, Add, Remove, TryRecv), the
//     building block of the timer package.
//   - Errors: ErrClosed, ErrAlreadyRegistered, ErrNotRegistered,
//     ErrRegisteredElsewhere, ErrReservedToken, ErrInvalidInterest,
//     ErrInvalidOpts, ErrInvalidFd, ErrInvalidArgument; match them with
//     errors.Is.
//
// # The contract
//
// On every backend, for every kind of source:
//
//  1. A source produces at most one Event per Poll call; readable and
//     writable merge into one event.
//  2. Edge: one notification each time new readiness arrives.
//  3. Level: a notification on every Poll call while the source is ready.
//  4. Oneshot: after one notification the source is disarmed until
//     Reregister.
//  5. Registering or reregistering a source that is already ready reports it
//     on the next Poll call.
//  6. Readiness outside the interest set is never reported.
//  7. Deregister (and Registration.Close) discards pending notifications: a
//     Poll call started after it returned never reports the source.
//  8. Readiness set from any goroutine at any moment is reported by a later
//     Poll call; a blocked Poll wakes up.
//  9. Spurious notifications are allowed (use non-blocking I/O), except for
//     a deregistered or closed source.
//  10. Delayed readiness fires no earlier than asked and at most one wheel
//     tick late; an idle Poll with nothing pending does not wake up.
//  11. Neither kind of source starves the other when more is ready than the
//     Events buffer holds.
//
// An event carries the readiness the kernel showed when it looked, and
// the kernel makes some changes in steps; what shows later is new
// readiness, reported by rules 2 to 5. A reset TCP connection, for one,
// can show Error before Hup, and a TCP connection that the peer closed
// can show Readable before Hup.
//
// Where the kernel lacks a mode, unipoll emulates it, exactly: the poll(2)
// backend reports an edge once and leaves the condition out of the
// kernel's view until the caller ends the pass (Fd.Drained after EAGAIN;
// the socket package does it itself), and emulates oneshot by disarming the
// descriptor in its user-space table. Code that follows the rule given
// under Edge behaves the same on every backend.
//
// # Concurrency
//
// Register, Reregister, Deregister, SetReadiness and Close may be called
// from any goroutine, also while another goroutine is blocked in Poll.
// Concurrent Poll calls are serialised. Tokens, not Go pointers, are what
// the kernel stores, so a kernel event that outlives its registration is
// recognised and dropped.
package poll
