package main

import (
	"testing"
)

// Parsing and running the requests redis-benchmark sends allocates
// nothing: no argument is copied, no error boxed, no reply buffer grown
// once warm.
func TestRequestsDoNotAllocate(t *testing.T) {
	s := &session{srv: &server{db: newStore(), maxReply: 1 << 20}}
	reqs := [][]byte{
		encode("PING"),
		[]byte("PING\r\n"),
		encode("SET", "key:__rand_int__", "xxx"),
		encode("GET", "key:__rand_int__"),
		encode("INCR", "counter"),
		encode("MGET", "key:__rand_int__", "nope"),
	}
	var args [][]byte
	run := func() {
		for _, r := range reqs {
			var n int
			var err error
			args, n, err = parse(r, args, defaultLimits)
			if err != nil || n != len(r) {
				t.Fatalf("parse(%q) = %d, %v", r, n, err)
			}
			s.out = s.execute(args, s.out[:0])
		}
		// The last parse of a read: the input is used up.
		if _, _, err := parse(nil, args, defaultLimits); err != errIncomplete {
			t.Fatalf("parse(nil) = %v", err)
		}
	}
	run()
	if a := testing.AllocsPerRun(100, run); a != 0 {
		t.Errorf("%v allocations per round of %d requests", a, len(reqs))
	}
}
