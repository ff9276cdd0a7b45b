// Package netloop is the connection layer on top of package eventloop:
// buffered connections that live on a Loop, and Groups of Loops that
// share listeners. It reaches the Loop only through eventloop's exported
// API: a Conn is a source added with Loop.Add like any other, its
// deadlines are Loop.AfterFunc functions, and it reads into the buffer
// the Loop's worker lends the call (Loop.ReadBuffer).
//
// # Conns
//
//   - Add(l, s, h, cfg) makes a Conn of a Stream (a *socket.TCPConn or
//     *socket.UnixConn) on l: input is handed to the Handler where it
//     lies, a read pass ends at the first short read (one read per
//     message), output is queued and written once per call, and the queue
//     is bounded (Config), with back pressure above a high-water mark
//     (PressureHandler) and hooks for the end of input (EOFHandler) and
//     the close (CloseHandler). HandlerFunc adapts a function.
//   - Config.ReadTimeout and IdleTimeout close a Conn that hears nothing
//     (ErrReadTimeout, ErrIdleTimeout), with one timeout per Conn on the
//     Poll's wheel.
//   - Conn.Write, Flush, Close, CloseWrite, Abort, PauseRead and
//     ResumeRead act on it from its own calls (or its Loop's, with one
//     worker); Conn.Async runs a function among its calls from any
//     goroutine. Conns(l) counts a Loop's Conns.
//
// # Relays
//
// Relay(a, b) ties two Conns together, as a proxy does with a client and
// its backend: each one's input becomes the other's output without
// passing through the Handlers. On Linux the bytes are spliced (splice(2))
// from socket to socket through a pipe per direction and never enter user
// space; elsewhere, or for a Stream without a descriptor, they are copied
// through a 64 KiB buffer per direction. Back pressure holds both ways
// (one pipe or buffer in flight per direction), a half-close is passed on
// once what came before it is written, and the two Conns close together:
// quietly when both directions have ended, with the error (and a reset if
// bytes are dropped) when either side fails.
//
// # Groups
//
// NewGroup opens N Loops (default GOMAXPROCS), one goroutine each;
// Group.ListenTCP shares a listener among them, handing connections round
// robin or to the Loop with the fewest Conns (Balance), or gives each
// Loop its own with ReusePort; AcceptFunc receives each connection on its
// Loop. A listener that cannot accept (out of descriptors) pauses
// (Group.AcceptPauses).
//
// # Errors
//
// Errors are sentinels matched with errors.Is: ErrClosed and
// ErrInvalidArgument (eventloop's), ErrWriteQueueFull, ErrReadBufferFull,
// ErrReadTimeout, ErrIdleTimeout, ErrRelayPeer. Nil and zero values return
// errors and never panic.
package netloop
