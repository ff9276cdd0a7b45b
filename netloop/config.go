package netloop

import (
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/unipoll/unipoll/eventloop"
)

// Config bounds a Conn's buffers and how long it may stay silent. The
// zero value means the defaults.
type Config struct {
	// MaxReadBuffer bounds the input a Conn keeps unconsumed: Data is never
	// handed more than this. A Conn whose handler consumes nothing of a
	// full buffer is closed with ErrReadBufferFull. Default 1 MiB. A TLS
	// Conn counts plaintext, and crypto/tls holds besides it the rest of
	// the record it is reading: at most one record (16 KiB) more.
	MaxReadBuffer int
	// MaxWriteQueue bounds the output queued and not yet written: a Write
	// that would pass it returns ErrWriteQueueFull and queues nothing.
	// Default 4 MiB.
	MaxWriteQueue int
	// HighWater: when more output than this is queued, the Conn stops
	// reading and tells a PressureHandler. Default 256 KiB.
	HighWater int
	// LowWater: when the queued output falls to this or less again,
	// reading resumes. Default HighWater/4.
	LowWater int
	// ReadsPerCall bounds the reads in one call of the Conn: a peer that
	// keeps the socket full gets this many, then the others have their
	// turn, and the Conn goes on in the next iteration. Default 8.
	ReadsPerCall int

	// The timeouts close the Conn with an error its CloseHandler hears;
	// 0 means no limit. A timeout resets the connection when it discards
	// queued output or unconsumed input, so the peer sees ECONNRESET,
	// never a clean end of a stream cut short (see Conn). Each has a
	// setter on Conn for changes after Add. How each counts while the Conn
	// is not reading (PauseRead, or back pressure: more than HighWater
	// queued) is part of its rule.

	// ReadTimeout closes the Conn (with ErrReadTimeout) when it has been
	// reading for this long and no input arrived. Time it does not read is
	// not counted: while it is paused (PauseRead, back pressure) the clock
	// stops, and when reading resumes it starts again from zero; after the
	// end of input, or Close, it stops for good. Not reading is the Conn's
	// choice, not the peer's fault; WriteTimeout covers a peer that stops
	// reading and so keeps the Conn above HighWater.
	ReadTimeout time.Duration
	// IdleTimeout closes the Conn (with ErrIdleTimeout) when neither input
	// has arrived nor output left for this long, whatever the reason:
	// paused or not, with output queued or not. It is the bound on a Conn
	// that does nothing.
	IdleTimeout time.Duration
	// WriteTimeout closes the Conn (with ErrWriteTimeout) when output has
	// been queued and none of it taken by the Stream for this long: the
	// peer stopped reading. The clock runs only while output is queued
	// (also while Close or CloseWrite waits for the queue to drain, and
	// while back pressure stops reading), and starts again at each write
	// that takes some. Output the kernel holds after the Stream took it is
	// not queued: bound that with the socket's own SetUserTimeout.
	WriteTimeout time.Duration

	// TLS, if not nil, makes the Conn speak TLS with crypto/tls and this
	// configuration (which the Conn does not modify): Add makes it the
	// server side, so a Group listener's AcceptFunc serves TLS by adding
	// with it; Dial makes it the client side, with ServerName taken from
	// the address's host when the configuration has none, as tls.Dial
	// does. The Handler sees plaintext through the same API: Data hears
	// input only once the handshake is done (TLSHandler is told then);
	// output written before is sent after it; Close and CloseWrite send
	// close_notify before the FIN; the peer's close_notify is the end of
	// input (EOFHandler), and so is its FIN at a record boundary, as
	// crypto/tls decides; a FIN inside a record is an error
	// (io.ErrUnexpectedEOF). Queued, Buffered, the bounds and the
	// timeouts count plaintext, and so do ConnStats' bytes. A failed
	// handshake closes the Conn with its error (a Dial's done hears it);
	// Relay refuses a TLS Conn. A TLS Conn's TCP socket gets TCP_NODELAY,
	// as package net's have: the handshake's last flight and the first
	// data go out in separate writes, and Nagle's algorithm would hold the
	// second for the peer's delayed ACK (40 ms on Linux); SetNoDelay(false)
	// undoes it. Dial refuses (ErrInvalidArgument) a Renegotiation other
	// than tls.RenegotiateNever: a renegotiation is a handshake inside
	// Read, which a Conn's call cannot wait for.
	TLS *tls.Config
	// HandshakeTimeout bounds a TLS handshake, from Add, the wait for a
	// place among the Loop's handshakes (MaxHandshakes) included: the
	// Conn is then closed with ErrHandshakeTimeout. Default
	// DefaultHandshakeTimeout (10 s).
	HandshakeTimeout time.Duration
	// MaxHandshakes bounds the TLS handshakes running at once on the
	// Conn's Loop: each runs in a goroutine (crypto/tls's handshake
	// blocks); more wait in a queue, without one, until a place is free.
	// A server's handshake asks for a place only once the Loop has read
	// the client's whole ClientHello, so clients that send nothing, or
	// part of one, take none.
	// An established Conn has no goroutine. Default
	// DefaultMaxHandshakes().
	MaxHandshakes int

	// Logger, if not nil, receives a Debug record for each Conn that ends
	// by a timeout ("netloop: conn timed out") or with a reset it sent
	// ("netloop: conn reset"), with the attributes err, local, remote and,
	// for a timeout, timeout (the limit). Nil: silent.
	Logger *slog.Logger
}

// Conn defaults.
const (
	DefaultMaxReadBuffer = 1 << 20
	DefaultMaxWriteQueue = 4 << 20
	DefaultHighWater     = 256 << 10
	DefaultReadsPerCall  = 8
)

// Errors returned by this package, wrapped with context; match them with
// errors.Is.
var (
	// ErrClosed is eventloop.ErrClosed: the Conn (or its Loop, or the
	// Group) has been closed.
	ErrClosed = eventloop.ErrClosed
	// ErrInvalidArgument is eventloop.ErrInvalidArgument: a nil Loop,
	// Stream, handler or function, a zero value, a Config out of range.
	ErrInvalidArgument = eventloop.ErrInvalidArgument
	// ErrWriteQueueFull: Write would queue more than
	// Config.MaxWriteQueue; nothing was queued.
	ErrWriteQueueFull = errors.New("unipoll: netloop: write queue full")
	// ErrReadBufferFull: the handler left Config.MaxReadBuffer bytes
	// unconsumed; the Conn was closed.
	ErrReadBufferFull = errors.New("unipoll: netloop: read buffer full")
)

func (c Config) withDefaults() (Config, error) {
	if c.MaxReadBuffer < 0 || c.MaxWriteQueue < 0 || c.HighWater < 0 || c.LowWater < 0 || c.ReadsPerCall < 0 ||
		c.ReadTimeout < 0 || c.IdleTimeout < 0 || c.WriteTimeout < 0 || c.HandshakeTimeout < 0 || c.MaxHandshakes < 0 {
		return c, fmt.Errorf("%w: netloop: negative Config field: %+v", ErrInvalidArgument, c)
	}
	if c.MaxReadBuffer == 0 {
		c.MaxReadBuffer = DefaultMaxReadBuffer
	}
	if c.MaxWriteQueue == 0 {
		c.MaxWriteQueue = DefaultMaxWriteQueue
	}
	if c.HighWater == 0 {
		c.HighWater = min(DefaultHighWater, c.MaxWriteQueue)
	}
	if c.LowWater == 0 {
		c.LowWater = c.HighWater / 4
	}
	if c.ReadsPerCall == 0 {
		c.ReadsPerCall = DefaultReadsPerCall
	}
	if c.HandshakeTimeout == 0 {
		c.HandshakeTimeout = DefaultHandshakeTimeout
	}
	if c.MaxHandshakes == 0 {
		c.MaxHandshakes = DefaultMaxHandshakes()
	}
	if c.HighWater > c.MaxWriteQueue || c.LowWater >= c.HighWater {
		return c, fmt.Errorf("%w: netloop: Config needs LowWater < HighWater <= MaxWriteQueue: %+v", ErrInvalidArgument, c)
	}
	return c, nil
}
