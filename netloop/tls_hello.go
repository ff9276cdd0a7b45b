package netloop

import "encoding/binary"

// A server's handshake takes a place among its Loop's handshakes
// (MaxHandshakes, each a goroutine) only once the Loop has buffered the
// client's whole ClientHello. Until then the Conn is an ordinary one that
// reads: a client that connects and sends nothing, or part of a hello,
// holds no goroutine and no place, so that any number of them cannot
// keep a real client's handshake waiting until their HandshakeTimeout.
// What the Loop buffers for a handshake that has no goroutine yet is
// bounded by helloFeedLimit (one record), not by tlsFeedLimit: a flood of
// half-open connections costs each one record at most.
//
// A client that sends a whole ClientHello and then nothing still holds a
// place until its HandshakeTimeout; that one has made the server compute
// its key exchange, which a connection that sends nothing does not.

// helloFeedLimit is one TLS record of the largest plaintext fragment
// (2^14 bytes) with its 5-byte header: a ClientHello longer than that
// (rare: the hello of a browser with a post-quantum key share is under
// 2 KiB) starts its handshake once this much is buffered, and crypto/tls
// reads the rest.
const helloFeedLimit = recordHeaderLen + maxFragment

const (
	recordHeaderLen = 5
	maxFragment     = 1 << 14
	recordHandshake = 22 // a TLS record's content type
	msgClientHello  = 1  // a handshake message's type
)

// helloReady reports whether b, the start of what a client sent, is
// enough for its handshake to begin: a whole ClientHello (in one record
// or several), helloFeedLimit bytes, or anything that is not a ClientHello
// (another record type, another message, a fragment over 2^14 bytes),
// which crypto/tls refuses with its own error as soon as it reads it.
func helloReady(b []byte) bool {
	if len(b) >= helloFeedLimit {
		return true
	}
	var head [4]byte // the handshake message's type and length
	have := 0        // handshake bytes in the whole records seen
	for len(b) >= recordHeaderLen {
		if b[0] != recordHandshake {
			return true
		}
		n := int(binary.BigEndian.Uint16(b[3:5]))
		if n > maxFragment {
			return true
		}
		if len(b) < recordHeaderLen+n {
			return false
		}
		frag := b[recordHeaderLen : recordHeaderLen+n]
		if have < len(head) {
			copy(head[have:], frag)
		}
		have += n
		if have >= len(head) {
			if head[0] != msgClientHello {
				return true
			}
			body := int(head[1])<<16 | int(head[2])<<8 | int(head[3])
			if have >= len(head)+body {
				return true
			}
		}
		b = b[recordHeaderLen+n:]
	}
	return false
}
