//go:build unix

// Package signal delivers Unix signals through a Poll: a Watcher is a
// poll.Evented, reported Readable while signals it watches are pending, so
// a program waits for signals, sockets, channels and child processes with
// one Poll call.
//
// The Go runtime owns the process's signal handlers and masks, so signalfd
// is not an option: signals arrive through os/signal. One relay per process
// asks os/signal for each watched signal once, with a one-value channel and
// one goroutine per signal (none per Watcher), and fans every delivery out
// to every Watcher of that signal, as a count and a SetReadiness. Two
// Watchers of one signal, on one Poll or on two, both see every delivery.
// A storm of signals costs constant memory: counts, not queues.
//
// # Index
//
//   - New makes a Watcher for some signals; Close stops it, and gives a
//     signal nobody watches any more its default action back.
//   - Watcher.Register, Reregister, Deregister: poll.Evented.
//   - Watcher.TryRecv takes one pending signal; Watcher.Drain takes them all,
//     with their counts; Watcher.Pending counts what is waiting.
//   - Watcher.Signals lists what it watches.
//   - Errors: ErrUncatchable (SIGKILL, SIGSTOP), ErrInvalidArgument (no
//     signal, nil, not a syscall.Signal), ErrClosed.
//
// A typical consumer:
//
//	w, err := signal.New(syscall.SIGTERM, syscall.SIGHUP)
//	...
//	p.Register(w, sigToken, poll.Readable, poll.Edge)
//	for {
//		p.Poll(events, -1)
//		for ev := range events.All() {
//			if ev.Token == sigToken {
//				for sig, ok := w.TryRecv(); ok; sig, ok = w.TryRecv() {
//					handle(sig)
//				}
//			}
//		}
//	}
package signal
