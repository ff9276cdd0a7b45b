package main

import (
	"bytes"
	"errors"
)

// The request parser: RESP2 arrays of bulk strings ("*2\r\n$3\r\nGET\r\n$1\r\nk\r\n")
// and inline commands ("GET k\r\n", what telnet and redis-benchmark's
// PING_INLINE send). It is stateless: it parses one request from the front
// of the unconsumed input, or says the input holds only part of one, and
// the Conn hands it the same bytes again, with more, next time. The
// arguments it returns point into the input: nothing is copied.
//
// Everything a peer declares is checked before it is trusted: a bulk
// string or an array longer than the limits is refused at its header,
// before its body arrives, so no buffer is ever sized by a peer. Nor is a
// line waited for without end: an inline command or a "*" or "$" header
// line that has not ended within maxInline bytes is refused then.

// limits bound a request.
type limits struct {
	maxArgs   int // elements in one array
	maxBulk   int // bytes in one bulk string (-max-bulk)
	maxInline int // bytes in one inline command, or in a header line
	maxTotal  int // bytes in one request, headers and all (-max-request)
}

// defaultLimits are redis-server's: proto-max-bulk-len (512 MiB) for a
// bulk string, client-query-buffer-limit (1 GiB) for a request, 64 KiB
// for an inline command (its PROTO_INLINE_MAX_SIZE). Arrays are held to
// 1024 elements, below redis' 1M for an unauthenticated client, as
// nothing here takes more arguments than MGET, DEL and EXISTS do.
// Neither size is ever allocated in advance: a Conn's buffer grows with
// what has arrived, and -max-client-memory bounds all of them together.
var defaultLimits = limits{
	maxArgs:   1024,
	maxBulk:   512 << 20,
	maxInline: 64 << 10,
	maxTotal:  1 << 30,
}

// protoError is a malformed or oversized request: the server replies with
// it and closes the connection, as redis-server does.
type protoError string

func (e protoError) Error() string { return "ERR Protocol error: " + string(e) }

// The errors are of type error, not protoError: returning a protoError
// value as an error would allocate each time.
var (
	errMultibulkLen   error = protoError("invalid multibulk length")
	errBulkLen        error = protoError("invalid bulk length")
	errTooBigMbulk    error = protoError("too big mbulk count string")
	errTooBigBulk     error = protoError("too big bulk count string")
	errTooBigInline   error = protoError("too big inline request")
	errUnbalanced     error = protoError("unbalanced quotes in request")
	errBulkTerminator error = protoError("bulk string not terminated by CRLF")
	errTooBigRequest  error = protoError("request too big")
	errHeaderCRLF     error = protoError("header line not terminated by CRLF")
)

// errIncomplete is not an error to reply with: the input holds only part
// of a request.
var errIncomplete = errors.New("incomplete request")

// parse parses one request from the front of in. It returns the
// arguments (args is reused for them), how many bytes of in the request
// took, and an error: errIncomplete if in holds only part of a request,
// a protoError if it is malformed or too big. A request with no arguments
// (an empty line, "*0\r\n") returns n > 0 and no arguments: skip it.
func parse(in []byte, args [][]byte, lim limits) ([][]byte, int, error) {
	args = args[:0]
	if len(in) == 0 {
		return args, 0, errIncomplete
	}
	if in[0] != '*' {
		return parseInline(in, args, lim)
	}
	count, pos, err := parseHeader(in, 1, lim, errTooBigMbulk)
	if err != nil {
		return args, 0, err
	}
	if count > int64(lim.maxArgs) {
		return args, 0, errMultibulkLen
	}
	if count <= 0 {
		return args, pos, nil // redis ignores "*0" and "*-1"
	}
	for range count {
		if pos >= len(in) {
			return args, 0, errIncomplete
		}
		if in[pos] != '$' {
			return args, 0, protoError("expected '$', got '" + printable(in[pos]) + "'")
		}
		size, next, err := parseHeader(in, pos+1, lim, errTooBigBulk)
		if err != nil {
			return args, 0, err
		}
		if size < 0 || size > int64(lim.maxBulk) {
			return args, 0, errBulkLen
		}
		end := next + int(size)
		if end+2 > lim.maxTotal {
			return args, 0, errTooBigRequest
		}
		if end+2 > len(in) {
			return args, 0, errIncomplete
		}
		if in[end] != '\r' || in[end+1] != '\n' {
			return args, 0, errBulkTerminator
		}
		args = append(args, in[next:end])
		pos = end + 2
	}
	return args, pos, nil
}

// parseHeader parses the integer of a "*n\r\n" or "$n\r\n" line starting
// at in[at] (after the type byte), and returns it and where the next line
// starts. A line with no end yet is bounded as an inline one is: counted
// from its type byte, as redis counts it, it may grow to maxInline bytes
// and is refused with tooBig past that.
func parseHeader(in []byte, at int, lim limits, tooBig error) (int64, int, error) {
	nl := bytes.IndexByte(in[at:], '\n')
	if nl < 0 {
		if len(in)-(at-1) > lim.maxInline {
			return 0, 0, tooBig
		}
		return 0, 0, errIncomplete
	}
	line := in[at : at+nl]
	if len(line) == 0 || line[len(line)-1] != '\r' {
		return 0, 0, errHeaderCRLF
	}
	v, ok := parseInt(line[:len(line)-1])
	if !ok {
		if tooBig == errTooBigMbulk {
			return 0, 0, errMultibulkLen
		}
		return 0, 0, errBulkLen
	}
	return v, at + nl + 1, nil
}

// parseInt parses a decimal integer with an optional minus sign, at most
// 18 digits (so it cannot overflow), as redis' string2ll does for the
// lengths it accepts.
func parseInt(b []byte) (int64, bool) {
	neg := false
	if len(b) > 0 && b[0] == '-' {
		neg, b = true, b[1:]
	}
	if len(b) == 0 || len(b) > 18 {
		return 0, false
	}
	var v int64
	for _, c := range b {
		if c < '0' || c > '9' {
			return 0, false
		}
		v = v*10 + int64(c-'0')
	}
	if neg {
		v = -v
	}
	return v, true
}

// parseInline parses a command line: arguments separated by spaces or
// tabs, with double quotes (and the escapes \n \r \t \b \a \\ \" \xHH) and
// single quotes (with \'), as redis-cli and redis-server split them. A
// quoted argument is unescaped in place, inside in.
func parseInline(in []byte, args [][]byte, lim limits) ([][]byte, int, error) {
	nl := bytes.IndexByte(in, '\n')
	if nl < 0 {
		if len(in) > lim.maxInline {
			return args, 0, errTooBigInline
		}
		return args, 0, errIncomplete
	}
	if nl > lim.maxInline {
		return args, 0, errTooBigInline
	}
	line := in[:nl]
	if len(line) > 0 && line[len(line)-1] == '\r' {
		line = line[:len(line)-1]
	}
	for i := 0; ; {
		for i < len(line) && (line[i] == ' ' || line[i] == '\t') {
			i++
		}
		if i == len(line) {
			break
		}
		if len(args) == lim.maxArgs {
			return args, 0, errMultibulkLen
		}
		var arg []byte
		var err error
		switch line[i] {
		case '"':
			arg, i, err = unquoteDouble(line, i+1)
		case '\'':
			arg, i, err = unquoteSingle(line, i+1)
		default:
			j := i
			for j < len(line) && line[j] != ' ' && line[j] != '\t' {
				j++
			}
			arg, i = line[i:j], j
		}
		if err != nil {
			return args, 0, err
		}
		args = append(args, arg)
	}
	return args, nl + 1, nil
}

// unquoteDouble unescapes a double-quoted argument starting after its
// quote, in place; the closing quote must end the argument.
func unquoteDouble(line []byte, i int) ([]byte, int, error) {
	start, w := i, i
	for ; i < len(line); i++ {
		c := line[i]
		switch {
		case c == '"':
			if i+1 < len(line) && line[i+1] != ' ' && line[i+1] != '\t' {
				return nil, 0, errUnbalanced // redis: closing quote must be followed by a space
			}
			return line[start:w], i + 1, nil
		case c == '\\' && i+3 < len(line) && line[i+1] == 'x' && isHex(line[i+2]) && isHex(line[i+3]):
			c = unhex(line[i+2])<<4 | unhex(line[i+3])
			i += 3
		case c == '\\' && i+1 < len(line):
			i++
			switch line[i] {
			case 'n':
				c = '\n'
			case 'r':
				c = '\r'
			case 't':
				c = '\t'
			case 'b':
				c = '\b'
			case 'a':
				c = '\a'
			default:
				c = line[i]
			}
		}
		line[w] = c
		w++
	}
	return nil, 0, errUnbalanced
}

// unquoteSingle unescapes a single-quoted argument (only \' is an escape).
func unquoteSingle(line []byte, i int) ([]byte, int, error) {
	start, w := i, i
	for ; i < len(line); i++ {
		c := line[i]
		switch {
		case c == '\'':
			if i+1 < len(line) && line[i+1] != ' ' && line[i+1] != '\t' {
				return nil, 0, errUnbalanced
			}
			return line[start:w], i + 1, nil
		case c == '\\' && i+1 < len(line) && line[i+1] == '\'':
			i++
		}
		line[w] = line[i]
		w++
	}
	return nil, 0, errUnbalanced
}

func isHex(c byte) bool {
	return c >= '0' && c <= '9' || c >= 'a' && c <= 'f' || c >= 'A' && c <= 'F'
}

func unhex(c byte) byte {
	switch {
	case c >= 'a':
		return c - 'a' + 10
	case c >= 'A':
		return c - 'A' + 10
	}
	return c - '0'
}

// printable shows a byte in an error message.
func printable(c byte) string {
	if c >= ' ' && c <= '~' {
		return string(rune(c))
	}
	const hexDigits = "0123456789abcdef"
	return `\x` + string([]byte{hexDigits[c>>4], hexDigits[c&15]})
}
