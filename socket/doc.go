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
// # The API
//
//   - Open: DialTCP, ListenTCP, DialUDP, ListenUDP, DialUnix, ListenUnix,
//     Pair; ListenOption (WithReusePort, WithBacklog) for ListenTCP.
//   - Adopt a descriptor made elsewhere: AdoptTCPConn, AdoptTCPListener,
//     AdoptUnixConn, and FileTCPConn, FileTCPListener, FileUnixConn for an
//     *os.File.
//   - Types: TCPListener and UnixListener (Accept), TCPConn and UnixConn
//     (Read, Write, CloseWrite), UDPConn (ReadFrom, WriteTo, or Read and
//     Write once connected); each with Fd, its addresses, Close and the
//     poll.Evented methods.
//   - Errors: ErrWouldBlock, ErrClosed, ErrNotOpen, ErrNeedsResolve,
//     ErrInvalidNetwork, ErrInvalidAddr, ErrWrongSocketType.
//
// # Addresses
//
// Addresses are IP literals ("127.0.0.1:8080", "[::1]:0"). A host name or
// a service name would need a lookup that can block for seconds, so it is
// refused with ErrNeedsResolve before any socket is opened; resolve names
// off the event loop and dial the addresses (see DialTCP and its example).
// "tcp" and "udp" mean IPv4 unless the address is an IPv6 one.
//
// # Edge-triggered registration
//
// Under poll.Edge a socket is reported once each time new readiness
// arrives, so after an event the caller works in a pass that must not stop
// while the socket is still ready, or no further event comes. A pass may
// stop at:
//
//   - reading a stream (TCPConn, UnixConn): ErrWouldBlock, or a short read,
//     fewer bytes than the buffer holds. The socket was drained at that
//     moment and data arriving later makes a new event, so one read per
//     message is enough when messages fit the buffer. Except when the
//     event reported poll.Hup (register Hup in the interest to see it):
//     the peer's end of stream is already there and makes no new event,
//     so read on to io.EOF. io.EOF ends reading for good.
//   - reading datagrams (UDPConn): ErrWouldBlock only. One read is one
//     datagram, and a short one says nothing about the next.
//   - writing, and accepting: ErrWouldBlock only.
//
// The sockets end the pass themselves at exactly these points
// (poll.Fd.Drained, which costs nothing where the kernel triggers edges
// natively), so that a backend that emulates edge triggering (poll(2)) can
// report each edge once without losing one. A socket registered as a raw
// poll.Fd gets none of this: register the socket itself.
//
// # Completion mode
//
// Registered with a Poll in completion mode (poll.Config.Completion on the
// "uring" backend), a TCPConn or UnixConn reads and writes through the
// poll.Stream it gets at Register. Read then returns bytes the ring has
// already received, and Write queues bytes that the ring sends with the
// Poll's next wait, 64 KiB at most before ErrWouldBlock. Neither makes a
// system call of its own. Completion reports whether a conn is in this
// mode, and CompletionBuffered what waits in its Stream. Code that reads,
// writes or splices Fd itself would take bytes out of order, so it must
// not touch a conn in this mode. A conn from DialTCP that is registered
// before it has connected stays on readiness I/O, since its Writable must
// mean "connected". The Stream stays with the conn until Close, through
// Deregister, so bytes received before a Deregister are still read in
// order.
//
// # Ownership and Close
//
// A socket owns its descriptor. Close deregisters the socket from the Poll
// it is registered with (if any) and then closes the descriptor, so that the
// Poll never holds a record of a descriptor number the kernel may hand out
// again. For the same reason register the socket itself, not poll.Fd(s.Fd()):
// only registrations made through the socket are tracked and undone by Close.
// A socket is registered with at most one Poll at a time; once that Poll is
// closed, it holds nothing, and the socket may be registered with another
// at once.
//
// After Close every operation returns an error matching ErrClosed (which is
// net.ErrClosed, so code written for package net recognises it too) and
// poll.ErrClosed, and a second Close does as well. A descriptor guard makes
// Close wait for operations in progress on other goroutines, so no
// operation ever uses a descriptor number after it has been closed and
// possibly reused.
//
// The zero value of each socket type, and a nil pointer to one, is a socket
// that was never opened: its methods return errors matching ErrNotOpen (and
// ErrClosed, and poll.ErrClosed), Register refuses it, Fd is -1, and no
// descriptor is ever touched. Sockets have no finalizers: a socket that is
// dropped without Close leaks its descriptor, as a raw descriptor would.
//
// Every socket's descriptor is non-blocking, and must stay so: on Linux,
// reads and writes of up to 64 KiB are made as raw system calls, which
// the Go runtime does not account as system calls (no hand-off of the
// goroutine's processor, no work for the runtime's monitor), because they
// cannot block. The Adopt and File functions switch an adopted descriptor
// to non-blocking; code that switches its open file description back
// (through a duplicate) would make such a read hold its goroutine's
// processor until data came.
//
// # Errors
//
// The would-block case is the hot path of every event-driven program, so it
// is the single value ErrWouldBlock, not a wrapped error: it matches both
// errors.Is(err, ErrWouldBlock) and errors.Is(err, unix.EAGAIN). Other
// failures of system calls are *os.SyscallError values (match the errno with
// errors.Is), and a stream whose peer has closed its side reads io.EOF. A
// connect that DialTCP started and the kernel then refused is the dial's
// failure, wrapped as DialTCP wraps one it sees at once ("socket: dial tcp
// 192.0.2.1:80: connect: connection refused"), whether ConnectError, Read
// or Write is the first to hear of it; a connect that succeeded stays so
// for ConnectError also when the connection ended before anyone asked.
// The package's other errors name it
// once, then the call and its address, then why.
//
// Two packages have a closed sentinel. A socket's own errors after Close
// (or before it was ever opened) match both socket.ErrClosed and
// poll.ErrClosed, whether they come from the socket's methods or from
// Poll.Register, Reregister and Deregister with the socket. A closed Poll
// answers with poll.ErrClosed alone: the socket itself is still open.
package socket
