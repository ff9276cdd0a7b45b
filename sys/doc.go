// Package sys is unipoll's operating-system layer: one Selector per kernel
// readiness mechanism (epoll on Linux, kqueue on the BSDs and darwin, poll(2)
// on every unix) behind one small contract, and the waker (eventfd,
// EVFILT_USER or a pipe) through which Wake interrupts a Select from
// another goroutine.
//
// The package knows nothing about tokens, registrations or handlers: a
// descriptor is registered with an opaque 64-bit key chosen by the caller
// (package poll stores a descriptor number and a generation in it), and
// Select reports that key back. Package poll is the only intended user;
// the package is public so that other pollers can reuse the selectors.
//
// Every selector gives the same meaning to the three trigger modes:
//
//   - Level: an event on every Select while the descriptor is ready.
//   - Edge: an event when new readiness arrives. Where the kernel has no edge
//     mode (poll(2)) it is emulated exactly: a reported condition is left
//     out of the kernel's view until Drained (after EAGAIN) or Modify.
//   - Oneshot: after one event the descriptor is disarmed until Modify.
//
// Selector states the whole contract: keys, concurrency, the one error
// every backend gives for each failure, hang-ups and errors; Traits says
// how a backend meets it where kernels differ.
//
// EINTR is retried inside the selector and never returned.
package sys
