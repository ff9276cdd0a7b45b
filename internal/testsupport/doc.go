// Package testsupport holds the helpers that the tests and benchmarks of
// several unipoll packages share, so that each exists once. It is for
// _test.go files only: no library code imports it.
//
// Waiting, never sleeping, for something another goroutine does:
//   - EventWait, NoEventWait: how long a test waits for what must happen,
//     and how long a Poll call waits to show that nothing does.
//   - Eventually: whether a condition comes to hold within a deadline.
//   - WaitFor: Eventually with EventWait, failing the test otherwise;
//     WaitForWithin, the same with a deadline of the caller's.
//   - LoadPerCPU: the load average per CPU, the scale of the scheduling
//     noise a timing bound allows for.
//
// A loop running in a goroutine of its own (eventloop's and netloop's
// tests; the loop's calls are passed in as functions, so that eventloop's
// own tests may use them):
//   - StartRun, Running: a Run in a goroutine, and Stop, which ends it.
//   - Quiesce: a few more iterations, so that what should not come would
//     have come.
//   - Held: a handler body whose first call waits to be released, and
//     CheckTriggerWhileHeld, a trigger taken by another worker meanwhile;
//     WaitClosed, a wait for a channel to close.
//   - Pipe: a non-blocking pipe.
//
// Resources:
//   - OpenFds, OpenFdsNow: the process's open descriptors, for leak tests.
//   - AnonFds, RequireAnonFdsBack: the process's descriptors on anonymous
//     inodes by kind (eventfd, eventpoll, pidfd, ...), and a check that
//     they come back to a count taken before; RequireRoundLeavesNoAnonFds,
//     that check around a round of work, after a first round.
//
// A package's TestMain: MainWithHelper runs the tests under goleak, or the
// helper a re-executed test binary was started for.
//
// Benchmarks:
//   - BenchCPU: the process's CPU time per op, as the cpu-ns/op metric;
//     StartBench, the start of a measured loop with it.
//   - Latency, Waiter, LatencySettle: how long a blocked goroutine takes to
//     run after another one wakes it (median-ns, p90-ns, p99-ns).
//   - Credit: the flow control of a notification-throughput benchmark, a
//     producer at most a window ahead of its consumer.
//   - RawEventfd (Linux): the system-call baseline, an eventfd watched by
//     an epoll instance of its own, with nothing of unipoll in between;
//     NotifyEventfd, the notification-throughput benchmark on it.
package testsupport
