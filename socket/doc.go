// Package socket provides non-blocking, close-on-exec sockets that register
// directly with a poll.Poll: TCP listeners and connections, UDP sockets,
// Unix-domain listeners and connections, and connected socket pairs.
//
// Every type implements poll.Evented by delegating to poll.Fd, so a socket
// is registered, reregistered and deregistered like any other source, and
// comes back out of Poll.Poll as an Event with its Token. Nothing here
// blocks: an operation that cannot proceed at once returns ErrWouldBlock,
// and the caller waits for the next Readable or Writable event.
//
// # Ownership and Close
//
// A socket owns its descriptor. Close deregisters the socket from the Poll
// it is registered with (if any) and then closes the descriptor, so that the
// Poll never holds a record of a descriptor number the kernel may hand out
// again. For the same reason register the socket itself, not poll.Fd(s.Fd()):
// only registrations made through the socket are tracked and undone by Close.
// A socket is registered with at most one Poll at a time.
//
// After Close every operation returns an error matching ErrClosed (which is
// net.ErrClosed, so code written for package net recognises it too), and a
// second Close does as well. A descriptor guard makes Close wait for
// operations in progress on other goroutines, so no operation ever uses a
// descriptor number after it has been closed and possibly reused.
//
// Sockets have no finalizers: a socket that is dropped without Close leaks
// its descriptor, as a raw descriptor would.
//
// # Errors
//
// The would-block case is the hot path of every event-driven program, so it
// is the single value ErrWouldBlock, not a wrapped error: it matches both
// errors.Is(err, ErrWouldBlock) and errors.Is(err, unix.EAGAIN). Other
// failures of system calls are *os.SyscallError values (match the errno with
// errors.Is), and a stream whose peer has closed its side reads io.EOF.
package socket
