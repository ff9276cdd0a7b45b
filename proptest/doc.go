// Package proptest is the property-based proof of unipoll's contract
// (ARCHITECTURE.md, "The contract", rules 1-11), run against every backend the
// build has. It holds no library code: an executable model of the
// contract (the non-test files) and the rapid properties that drive the
// real library and check it against the model (the _test files).
//
// The model reads the kernel's view of its descriptors (poll(2) with
// POLLRDHUP) and builds them with Linux flags, so the package builds on
// Linux only for now; running it against kqueue on a BSD or darwin
// machine needs a kernel-state probe for that platform.
//
// # What is modelled
//
// The model keeps, for every source registered with one Poll, its token,
// interest, mode (Edge, Level, Oneshot), armed state, readiness, whether a
// notification is owed (an edge arrived, or it was registered while ready)
// or merely allowed (a spurious one), and for each Poll call decides what
// MUST appear (level and ready; owed and ready; armed oneshot), what MAY
// appear (rule 9: kernel wake-ups with nothing new, a condition re-armed
// while it is still there, delayed readiness inside its firing window) and
// what MUST NOT (tokens never registered or retired by Deregister, Close or
// Reregister; readiness outside the interest or not there; two events for
// one token in a call; a disarmed oneshot; an edge source with nothing
// new). A call whose buffer was full may leave MUST sources for later
// calls; they are carried over and must appear within 2n+2 calls (n
// sources registered), which also checks that neither kind of source
// starves the other (rule 11).
// The model asks the selector how it meets the contract (sys.Traits)
// rather than knowing backends by name. Where edge is emulated (poll(2)),
// a reported condition is quiet until the caller ends the pass
// (Fd.Drained after a read that ended it); the model re-arms as the rule under
// poll.Edge says and does not owe an edge for a quiet condition. A
// descriptor whose only readiness is a lasting hang-up or error may rest
// out of the kernel's view for up to the selector's RestLatency; a new
// condition on it is given that long (plus slack) before it MUST appear
// (backend.lastingLatency).
//
// Besides the sources, a world may have a crowd (model_crowd.go): 1,000
// to 3,000 Registrations, past the consumer's held list threshold
// (heldKeep, 1,024), made ready, unset, re-armed and closed in bursts, and
// modelled member by member with the same rules, so that the held list
// grows, wraps around, releases idle members and is trimmed under the
// model.
//
// Its core is four files: model.go (the vocabulary: the kind and impl
// interfaces, the backend's traits, the model of one source),
// model_world.go (the world: one Poll, its sources, logging and failure
// messages, the notifications kinds report), model_ops.go (the generic
// operations the state machine draws) and model_oracle.go (one Poll call
// checked against the model, which it then advances). The steps that reach
// past one busy goroutine have a file each (model_lag.go,
// model_blocked.go, model_crowd.go).
//
// One file per kind of source: model_fd.go (an end of a unix socket pair,
// with the peer's writes, reads, half-closes and close; the read end of a
// pipe, with the writer's writes and close), model_registration.go
// (SetReadiness, UnsetReadiness, DelayReadiness with its window "no earlier
// than the delay, at most one tick late", Close), model_channel.go (Send,
// TrySend, TryRecv, Drain, Clone and Close of Senders, Receiver Close;
// with model_channel_{pending,recv,blocked}.go: the channel's own state,
// Len, the values pending in each Sender's order, the room left, Drains
// stopped early at a drawn value and what they hand back, and SendWait,
// producers whose blocking Sends sleep on a full channel until a receive
// makes room, as many going on as it made room for), model_timer.go (with
// model_timer_{ops,deadlines}.go: Set, SetBurst, Pile, Lapse, Cancel,
// Poll, Drain stopped early, Close; each timeout's state and deadline,
// Stats and Len checked exactly after every step, values in deadline
// order, and exact deadline bounds: never fired by a call that ended
// before the deadline, fired by any call that started a window after it,
// and every earlier deadline fired with it), model_signal.go (signals raised at the process,
// Watchers of overlapping sets each counting every one, Next, Drain,
// Close) and model_child.go (children that exit, are killed, stopped and
// continued, on the pidfd and the SIGCHLD paths; reaped at once by the
// owner, with the SIGCHLD table checked against the model after every
// step; Status, Close). A kind
// implements the kind and impl interfaces of model.go and registers itself
// from init; a new kind of source is one more file. The event loop is
// modelled on top, in model_loop.go, model_loop_ops.go and
// model_loop_iterate.go (handler actions and removal as operations of a
// Loop driven by RunOnce, each iteration checked) and model_loop_conn*.go
// (Conns on unix socket pairs: writes up to the bound and one past it,
// Close, Abort, PauseRead, ResumeRead, the peer's sends, reads and
// shutdowns; output and input conserved byte for byte, back pressure by
// the water marks, open or closed, CloseHandler's error, checked after every
// step).
//
// # The properties
//
//   - TestStateMachine (statemachine_test.go): rapid state machine over
//     real sources on one Poll, per backend: Open, Register, Reregister,
//     Deregister, Misuse (bad arguments), the kinds' operations, and Poll
//     with a capacity of 1 to 8 and a timeout of 0, 1-5ms or forever (only
//     when the model knows it must return). Every result is checked
//     against the model; spurious events are counted, not failed. Two
//     steps reach what a single goroutine polling all the time does not:
//     Lag (model_lag.go) lets time pass with no Poll call, past a whole
//     rotation of a small wheel, after which every delay that came due
//     must fire in the next call (rule 10); ChangeBlocked
//     (model_blocked.go) has another goroutine Register or Reregister a
//     quiet, ready source while this one blocks in Poll(-1), which must
//     wake at once (rules 5, 8).
//   - TestStateMachineCrowd (statemachine_crowd_test.go): the same with
//     the crowd's steps (Crowd, CrowdBurst, CrowdUnset, CrowdRearm,
//     CrowdClose, CrowdBurstBlocked from another goroutine during a
//     Poll(-1), PollMany with a buffer of up to the whole crowd), on wheels
//     of 4 to 16 slots of 1ms.
//   - TestConcurrentNoLostWakeup, TestConcurrentNoLostReadiness,
//     TestConcurrentRetire, TestConcurrentFdReuse, TestConcurrentClose
//     (concurrency_test.go, for -race): producers on other goroutines with
//     an acknowledgement protocol (rule 8, checked exactly); readiness bits
//     set concurrently never lost; nothing reported for a token after the
//     Deregister, Close or Reregister that retired it returned, and a token
//     never carrying readiness outside its own interest (rules 6, 7, with
//     a logical clock); no stale kernel event when descriptor numbers are
//     reused; Poll.Close in the middle of everything.
//   - TestConcurrentRegisterWakes (wake_register_test.go, rules 5, 8): a
//     consumer blocked in Poll (forever, or for 5s) must be woken at once
//     by a Register or Reregister, from another goroutine, that alone
//     makes a Registration reportable (ready and newly registered, a
//     widened interest, a re-armed oneshot, an edge reregistered).
//   - TestConcurrentWakeSources (wake_sources_test.go, rules 2-5, 8, 10):
//     SetReadiness, short delays, registration changes, a peer's writes,
//     wake-ups for nothing and storms of queue and wheel wake-ups race a
//     consumer that always blocks forever; every owed event is
//     acknowledged, and the run ends by a known wake-up (a "done"
//     Registration, Close, or both) that the last Poll(-1) must answer.
//   - TestPeerLifecycle (statemachine_test.go): registered sockets
//     through their peers' whole life (writes both ways, half-closes,
//     close with data unread) with only short Polls in between: lasting
//     conditions arriving one after the other on parked or resting
//     descriptors.
//   - TestChannelStateMachine, TestChannelConcurrentSenders
//     (channel_test.go): the state machine with channels as the only kind
//     of source; producers with Senders of their own (Send, or TrySend
//     driven by Writable) against one consumer in a drawn mode, every value
//     arriving once and in order, the disconnection after the last value.
//   - TestFairness (fairness_test.go): always-ready sources, a small
//     buffer: none waits more than 2n+2 calls (rule 11).
//   - TestDelayTiming, TestIdlePoll (timing_test.go): rule 10, for
//     DelayReadiness and timer.Set with exact bounds: never early, and
//     late only by the scheduling delay measured for that Poll call
//     (timing_meter_test.go reads it from /proc/thread-self/schedstat).
//   - TestTimerPileUp (timer_test.go): expired values left partly taken,
//     then more than the room left expiring in one Poll call, all in
//     deadline order; its steps do not depend on timing, so it shrinks.
//   - TestLoopConcurrent (loop_concurrent_test.go,
//     loop_concurrent_conn_test.go): a Loop on several workers; every
//     Trigger, also one sent while the handler runs on another worker, is
//     followed by a call that began after it, calls of one source never
//     overlap, and a Conn's Async functions and its peer's input arrive
//     once and in order.
//   - TestConnDeadlineTiming (loop_timing_test.go): a Conn's read and idle
//     timeouts on the monotonic clock: never early, late by at most a tick
//     plus the Loop's lateness measured by a probe.
//   - TestDelayBehind (timing_behind_test.go, rule 10): a consumer that
//     does not poll for one to three rotations of a small wheel; every
//     delay due by then fires in its next Poll, reported then or, for lack
//     of room, in the calls that follow.
//   - FuzzStateMachine, FuzzRegistrations (fuzz_test.go): the state
//     machine as fuzz targets (rapid.MakeFuzz); go test runs their seeds.
//   - TestTimerStateMachine and TestChannelStateMachine (timer_test.go,
//     channel_test.go): the state machine with one kind only;
//     TestTimerCancelRacingExpiry: setters, cancellers and a consumer at
//     once, every timeout cancelled or taken exactly once, never early, no
//     lost readiness; TestChannelConcurrentSenders: many senders, each
//     one's order kept, every value once.
//   - regression_test.go: the shrunk counterexamples the properties found
//     in the library, as plain tests.
//
// # Waiting for a wake-up
//
// A property that waits for a blocked Poll to wake up watches the
// poller's thread (probe.go): /proc shows whether it is asleep in the
// selector's system call, and a thread that has been woken never is. A
// poller seen asleep for stallFast (100ms) while it owes an event was not
// woken: the failure shows in a tenth of a second, however loaded the
// machine, and a failing case shrinks without waiting out a long timeout
// at every step. wakeBound (1s) and blockLimit (1s) remain as backstops
// where the probe cannot judge. After a failure a kicker (kick.go), a
// socket registered with the Poll, ends a Poll that the bug left blocked
// for good, so that Close, which needs the broken wake-up, can finish and
// the test reports instead of hanging.
//
// # Running
//
//	go test -race ./proptest/                      # every backend of this build
//	UNIPOLL_BACKEND=poll go test -race ./proptest/ # one backend
//	go test -race -tags unipoll_debug ./proptest/  # with poll's assertions (as CI does)
//
// With -tags unipoll_debug, package poll checks the invariants of its
// readiness queue and held list where it relies on them and panics at
// once (poll/invariants.go): rapid reports the panic, with the stack of
// the operation that broke the invariant, and shrinks the case to the step
// that did, instead of meeting a lost or doubled event operations later.
//
// TestMain raises rapid's steps per check to 60 (unless -rapid.steps or
// RAPID_STEPS says otherwise), checks for leaked goroutines (goleak) and
// descriptors, and prints the totals: checks, operations, Poll calls,
// events, spurious events, events carried over for lack of room.
//
// # Replaying a failure
//
// rapid shrinks a failing case and prints it: every drawn value, and the
// operations as a numbered script (the model logs each one). It also
// prints how to replay it:
//
//	go test ./proptest -run 'TestStateMachine/epoll' -rapid.seed=N
//
// and saves a fail file, testdata/rapid/<Test>/<Test>-<time>-<pid>.fail,
// which rapid replays first on every later run of that test (or pass it
// with -rapid.failfile=path); delete it once the bug is fixed. Failures
// that depend on timing (delays, concurrency) may not replay exactly; the
// failure message itself includes the model state and the last 80
// operations of the original run. -rapid.v shows every case, -rapid.nofailfile
// writes no fail file.
//
// # Soak
//
// PROPTEST_SOAK=1 multiplies rapid's checks by 100 (PROPTEST_SOAK=N, N >
// 100, by N); it sets the -rapid.checks flag from TestMain, so it scales
// RAPID_CHECKS or an explicit -rapid.checks too. The properties that mostly
// sleep get a tenth of that (TestDelayTiming, TestIdlePoll,
// TestDelayBehind) or a quarter (TestConcurrentFdReuse, and
// TestStateMachineCrowd and TestConcurrentWakeSources, whose cases are
// long), so that they do not take the soak's whole time.
// Give it time, for example:
//
//	PROPTEST_SOAK=1 go test -race -timeout 60m ./proptest/
//
// rapid stops a property early, and passes, when the test deadline is
// near, so a soak bounded by -timeout ends cleanly.
package proptest
