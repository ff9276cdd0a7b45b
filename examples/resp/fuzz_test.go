package main

import (
	"bytes"
	"errors"
	"testing"
	"unsafe"
)

// The parser's fuzz targets. go test runs their seeds and the corpus in
// testdata/fuzz; go test -fuzz=FuzzParse ./examples/resp explores further.
//
// Smaller limits than the server's, so that the fuzzer reaches them; a
// bulk string and its CRLF fit within maxInline (see stillPossible).
var fuzzLimits = limits{maxArgs: 8, maxBulk: 64, maxInline: 128, maxTotal: 512}

var parseSeeds = []string{
	"*1\r\n$4\r\nPING\r\n",
	"PING\r\n",
	"*3\r\n$3\r\nSET\r\n$16\r\nkey:__rand_int__\r\n$3\r\nxxx\r\n",
	"*2\r\n$3\r\nGET\r\n$16\r\nkey:__rand_int__\r\n",
	"SET a \"b c\\x41\\n\" 'd\\'e'\r\n",
	"*2\r\n$3\r\nGET\r\n:1\r\n",
	"*-1\r\n*0\r\n\r\n",
	"*1\r\n$-1\r\n",
	"*99999999999999999999\r\n",
	"*1\r\n$3\r\nab",
	"\"unbalanced\r\n",
	"*2\r\n$1\r\na\r\n$1\r\nb\r\n*1\r\n$4\r\nPING\r\n",
	"*1111111111111111111111111111111111111111", // header lines with no end yet
	"*1\r\n$1111111111111111111111111111111111111",
}

// FuzzParse runs the parser over arbitrary input the way a session does,
// request after request, and checks what it promises: it never panics or
// reads outside its input; a request consumes at least one byte and no
// more than there is; every argument lies inside the request and within
// the limits; a request that parses whole is, cut anywhere short of its
// end, reported incomplete, never as an error or as another request; and
// incomplete is said only of input that could still become a request,
// never of a line that has outgrown the line bound (see stillPossible).
func FuzzParse(f *testing.F) {
	for _, s := range parseSeeds {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		in := append([]byte(nil), data...)
		var args [][]byte
		for off := 0; off < len(in); {
			rest := in[off:]
			orig := append([]byte(nil), rest...) // parse unescapes inline quotes in place
			var n int
			var err error
			args, n, err = parse(rest, args, fuzzLimits)
			if errors.Is(err, errIncomplete) {
				stillPossible(t, rest)
				return
			}
			if err != nil {
				var pe protoError
				if !errors.As(err, &pe) {
					t.Fatalf("error %v is neither incomplete nor a protocol error", err)
				}
				return
			}
			if n <= 0 || n > len(rest) {
				t.Fatalf("consumed %d of %d bytes", n, len(rest))
			}
			if len(args) > fuzzLimits.maxArgs {
				t.Fatalf("%d arguments, limit %d", len(args), fuzzLimits.maxArgs)
			}
			for _, a := range args {
				if !inside(a, rest[:n]) {
					t.Fatalf("argument %q outside the request", a)
				}
				if len(a) > max(fuzzLimits.maxBulk, fuzzLimits.maxInline) {
					t.Fatalf("argument of %d bytes", len(a))
				}
			}
			for cut := range n {
				prefix := append([]byte(nil), orig[:cut]...)
				if _, _, err := parse(prefix, nil, fuzzLimits); !errors.Is(err, errIncomplete) {
					t.Fatalf("the first %d of the %d bytes of request %q parse as %v, not incomplete", cut, n, orig[:n], err)
				}
			}
			off += n
		}
	})
}

// stillPossible checks input the parser called incomplete: it must be
// able to become a request, so its unended last line (after its last line
// end, if any) is within the line bound, and the parser must not wait
// beyond it. Its last line is an inline command, a "*" or "$" header, or
// part of a bulk string, which fuzzLimits keeps short enough that it and
// its CRLF fit within the bound too. Grown with digits (what keeps a
// header a plausible length) to one byte past the bound, with no line
// end, the input is refused: the inline or header line is too long, or
// the bulk string is not followed by CRLF.
func stillPossible(t *testing.T, in []byte) {
	t.Helper()
	last := len(in) - (bytes.LastIndexByte(in, '\n') + 1)
	if last > fuzzLimits.maxInline {
		t.Fatalf("%q is incomplete with an unended line of %d bytes, bound %d", in, last, fuzzLimits.maxInline)
	}
	grown := append(append([]byte(nil), in...), bytes.Repeat([]byte("1"), fuzzLimits.maxInline+1-last)...)
	if _, _, err := parse(grown, nil, fuzzLimits); errors.Is(err, errIncomplete) {
		t.Fatalf("%q, grown to an unended line of %d bytes, is still incomplete", in, fuzzLimits.maxInline+1)
	}
}

// inside reports whether a lies within b (or is empty).
func inside(a, b []byte) bool {
	if len(a) == 0 {
		return true
	}
	lo := uintptr(unsafe.Pointer(unsafe.SliceData(b)))
	p := uintptr(unsafe.Pointer(unsafe.SliceData(a)))
	return p >= lo && p+uintptr(len(a)) <= lo+uintptr(len(b))
}

// FuzzRoundTrip encodes arguments as a RESP array, as every client does,
// and checks that the parser gives them back exactly, consuming the whole
// request.
func FuzzRoundTrip(f *testing.F) {
	f.Add([]byte("SET\x00k\x00v"), byte(0))
	f.Add([]byte("\r\n\x00$3\r\n\x00*"), byte(0))
	f.Add([]byte("a b c"), byte(' '))
	f.Fuzz(func(t *testing.T, joined []byte, sep byte) {
		args := bytes.Split(joined, []byte{sep})
		if len(args) > defaultLimits.maxArgs {
			return
		}
		strs := make([]string, len(args))
		for i, a := range args {
			strs[i] = string(a)
		}
		req := encode(strs...)
		got, n, err := parse(req, nil, defaultLimits)
		if err != nil {
			t.Fatalf("parse(%q): %v", req, err)
		}
		if n != len(req) {
			t.Fatalf("consumed %d of %d", n, len(req))
		}
		if len(got) != len(args) {
			t.Fatalf("%d arguments, want %d", len(got), len(args))
		}
		for i := range args {
			if !bytes.Equal(got[i], args[i]) {
				t.Fatalf("argument %d: %q, want %q", i, got[i], args[i])
			}
		}
	})
}
