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
//   - Config.ReadTimeout, IdleTimeout and WriteTimeout close a Conn
//     whose peer is silent, idle or no longer reading (ErrReadTimeout,
//     ErrIdleTimeout, ErrWriteTimeout), with one timeout per Conn on the
//     Poll's wheel; Config says how each counts under PauseRead and back
//     pressure. Conn.SetReadTimeout, SetIdleTimeout and SetWriteTimeout
//     change them from any goroutine.
//   - A close that discards output resets the connection (SO_LINGER 0),
//     so the peer sees ECONNRESET, never a truncated stream ending
//     cleanly: Abort always, a timeout or an error when output was
//     queued or input unconsumed (see Conn). Close writes everything
//     queued, then sends a FIN.
//   - Conn.SetNoDelay, SetKeepAlive, SetKeepAliveConfig, SetLinger,
//     SetReadBuffer, SetWriteBuffer and SetUserTimeout reach the socket
//     from any goroutine (socket.ErrUnsupportedOption where the Stream
//     has no such option); Conn.Stats counts bytes, reads and writes each
//     way and says since when; Config.Logger hears, at Debug, each Conn
//     that ends by a timeout or with a reset.
//   - Conn.Write, Flush, Close, CloseWrite, Abort, PauseRead and
//     ResumeRead act on it from its own calls (or its Loop's, with one
//     worker); Conn.Async runs a function among its calls from any
//     goroutine. Conns(l) counts a Loop's Conns.
//
// # Dialing
//
// Dial (or a Dialer, with a timeout and a Resolver) connects to a TCP or
// Unix address from a Loop and calls done once, on the Loop: with a live
// Conn, in its first call and before its handler hears anything, or with
// the reason there is none (refused, ErrDialTimeout, the context's
// cancellation, unreachable, a *net.DNSError, ErrClosed). The connect is
// watched by the Loop's Poll and its timeout kept on the Poll's timing
// wheel; a host name is resolved in a goroutine, off the Loop, and its
// addresses are tried in turn.
//
// # TLS
//
// Config.TLS, a *tls.Config of the standard library, makes a Conn speak
// TLS 1.2 or 1.3 with crypto/tls as it is (no copy, no fork): Add serves
// it (a Group listener's AcceptFunc adds with it), Dial is its client,
// with the address's host as ServerName when the configuration names
// none. The Handler sees plaintext through the same API, bounds and
// timeouts; Conn.ConnectionState says what the handshake agreed, and a
// TLSHandler is told when it is done. Close and CloseWrite send
// close_notify before the FIN; the peer's close_notify (or its FIN at a
// record boundary, as crypto/tls decides) is the end of input.
// Renegotiation is refused as crypto/tls refuses it: a client's attempt
// ends its Conn with crypto/tls's error, and Dial refuses a Config.TLS
// that would renegotiate (see Config.TLS).
//
// One part of crypto/tls cannot be driven without blocking: the
// handshake (tls.Conn.Handshake) reads and writes as if blocking and
// latches its first error, so it cannot stop at "no input yet" and
// resume. It runs in a goroutine, over a transport whose reads wait for
// the ciphertext the Loop reads from the socket and whose writes the Loop
// writes to it. Those goroutines are bounded per Loop by
// Config.MaxHandshakes (the rest wait in a queue, a pointer each), and
// Config.HandshakeTimeout closes a Conn whose handshake, queued or
// running, has not finished (ErrHandshakeTimeout). A server's handshake
// takes a place only once the Loop has read the client's whole
// ClientHello: a client that connects and sends nothing, or part of a
// hello, holds no goroutine and no place, and at most one record (16 KiB)
// of its input is held. One that sends a whole hello and then stalls
// holds a place until its timeout, so size MaxHandshakes and
// HandshakeTimeout for the clients' round trips. An established Conn
// has no goroutine: the Loop calls tls.Conn.Read and Write in the Conn's
// calls, over the same transport, whose Read returns a temporary
// net.Error when the socket has nothing more, which crypto/tls's record
// reader passes back without latching it. Post-handshake messages (new
// session tickets, the peer's KeyUpdate) are handled inside that Read,
// and what it writes in reply is flushed in the same call.
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
// bytes are dropped) when either side fails. When both Conns are on one
// Loop with one worker, a source writes what it reads into its peer's
// socket in the same call, as io.Copy does: small bursts with a read and
// a write, large ones spliced.
//
// # Groups
//
// NewGroup opens N Loops (default GOMAXPROCS), one goroutine each;
// Group.ListenTCP shares a listener among them, handing connections round
// robin or to the Loop with the fewest Conns (Balance), or gives each
// Loop its own with ReusePort; AcceptFunc receives each connection on its
// Loop. Group.ListenUnix does the same for a Unix-domain socket
// (UnixAcceptFunc), and Group.ListenUDP hands every datagram, with its
// sender, to a PacketFunc on the socket's Loop (one socket per Loop with
// ReusePort). Each returns a Listener, which Listener.Close closes on its
// own. A listener that cannot accept (out of descriptors) pauses
// (Group.AcceptPauses). GroupConfig.Logger, a log/slog Logger, hears
// accept failures and pauses (Warn) and drains (Info); nil is silent.
//
// # Graceful shutdown
//
// Group.Shutdown(ctx) closes the Group's Listeners at once, so new
// clients are refused; tells every Conn that a drain has begun (a
// DrainHandler finishes it its own way, any other Conn closes once its
// queued output is written); waits for them to close; at ctx's end ends
// the rest with Abort; and stops the Loops, so Run returns. Shutdown(ctx,
// l) does the same for a lone Loop's Conns. Each Loop keeps a registry of
// its Conns for this (Conns counts them); the drain reaches each Conn
// through Async, so it runs among the Conn's own calls.
//
// # Errors
//
// Errors are sentinels matched with errors.Is: ErrClosed and
// ErrInvalidArgument (eventloop's), ErrWriteQueueFull, ErrReadBufferFull,
// ErrReadTimeout, ErrIdleTimeout, ErrWriteTimeout, ErrDialTimeout,
// ErrHandshakeTimeout, ErrRelayPeer. Nil and zero values return errors and never panic.
package netloop
