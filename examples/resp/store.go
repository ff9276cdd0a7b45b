package main

import (
	"hash/maphash"
	"math"
	"strconv"
	"sync"
	"time"
)

// store is the key space, shared by every Loop: strings only, in shards
// with a lock each, so Loops on different cores rarely wait for one
// another. A key with an expiry is dropped when it is looked at after it
// (lazily, as redis does first) and by sweep (actively, as redis does
// too), so keys nobody reads again do not stay forever.
type store struct {
	seed   maphash.Seed
	shards [storeShards]shard
}

const storeShards = 64

type shard struct {
	mu sync.RWMutex
	m  map[string]*value
	_  [40]byte // keep neighbouring shards' locks off one cache line
}

// value is a string and its expiry (Unix nanoseconds, 0 for none). The
// map holds pointers, so that overwriting a key changes its value in
// place: no new key string (assigning m[string(b)] would allocate one).
type value struct {
	b   []byte
	exp int64
}

func newStore() *store {
	s := &store{seed: maphash.MakeSeed()}
	for i := range s.shards {
		s.shards[i].m = map[string]*value{}
	}
	return s
}

func (s *store) shard(key []byte) *shard {
	return &s.shards[maphash.Bytes(s.seed, key)%storeShards]
}

func now() int64 { return time.Now().UnixNano() }

func (v *value) expired(t int64) bool { return v.exp != 0 && v.exp <= t }

// gone reports whether v has expired by now. The clock is read only for
// a key with an expiry: a reading is about 5% of a pipelined GET's or
// SET's CPU here, and most keys have none.
func (v *value) gone() bool { return v.exp != 0 && v.exp <= now() }

// get appends the value of key to dst with f (under the shard's lock, so
// the value cannot change meanwhile) and reports whether it exists.
func (s *store) get(key []byte, dst []byte, f func(dst, v []byte) []byte) ([]byte, bool) {
	sh := s.shard(key)
	sh.mu.RLock()
	v, ok := sh.m[string(key)]
	if ok && v.gone() {
		ok = false
	}
	if ok {
		dst = f(dst, v.b)
	}
	sh.mu.RUnlock()
	return dst, ok
}

// setMode is SET's NX or XX.
type setMode uint8

const (
	setAlways setMode = iota
	setNX             // only if the key does not exist
	setXX             // only if it does
)

// set stores a copy of val under key, expiring at exp (0: never), and
// reports whether it did (NX and XX may say no).
func (s *store) set(key, val []byte, exp int64, mode setMode) bool {
	sh := s.shard(key)
	sh.mu.Lock()
	defer sh.mu.Unlock()
	v, found := sh.m[string(key)]
	exists := found && !v.gone()
	if mode == setNX && exists || mode == setXX && !exists {
		return false
	}
	if !found {
		v = &value{}
		sh.m[string(key)] = v
	}
	if cap(v.b) < len(val) || cap(v.b) > 2*len(val)+64 {
		v.b = make([]byte, len(val))
	}
	v.b = v.b[:len(val)]
	copy(v.b, val) // readers copy under the lock: reusing v.b is safe
	v.exp = exp
	return true
}

// del removes key and reports whether it existed.
func (s *store) del(key []byte) bool {
	sh := s.shard(key)
	sh.mu.Lock()
	defer sh.mu.Unlock()
	v, ok := sh.m[string(key)]
	if !ok {
		return false
	}
	delete(sh.m, string(key))
	return !v.gone()
}

// exists reports whether key exists.
func (s *store) exists(key []byte) bool {
	sh := s.shard(key)
	sh.mu.RLock()
	defer sh.mu.RUnlock()
	v, ok := sh.m[string(key)]
	return ok && !v.gone()
}

// incrError is INCR's failure, as redis words it.
type incrError string

func (e incrError) Error() string { return string(e) }

const (
	errNotInteger = incrError("ERR value is not an integer or out of range")
	errOverflow   = incrError("ERR increment or decrement would overflow")
)

// incr adds one to the integer stored at key (0 if there is none) and
// returns the result. The expiry is kept, as redis keeps it.
func (s *store) incr(key []byte) (int64, error) {
	sh := s.shard(key)
	sh.mu.Lock()
	defer sh.mu.Unlock()
	v, found := sh.m[string(key)]
	var n int64
	switch {
	case !found:
		v = &value{}
		sh.m[string(key)] = v
	case v.gone():
		v.exp = 0
	default:
		var ok bool
		if n, ok = parseInteger(v.b); !ok {
			return 0, errNotInteger
		}
	}
	if n == math.MaxInt64 {
		return 0, errOverflow
	}
	n++
	v.b = strconv.AppendInt(v.b[:0], n, 10)
	return n, nil
}

// parseInteger parses a stored integer as redis' string2ll does: an
// optional minus sign and decimal digits, no sign '+', no leading zero,
// no spaces, within int64.
func parseInteger(b []byte) (int64, bool) {
	if len(b) == 0 || len(b) > 20 {
		return 0, false
	}
	if len(b) > 1 && b[0] == '0' || len(b) > 1 && b[0] == '-' && b[1] == '0' || b[0] == '+' {
		return 0, false
	}
	n, err := strconv.ParseInt(string(b), 10, 64)
	return n, err == nil
}

// sweep drops expired keys, looking at up to perShard keys of each shard
// (Go's map iteration starts at a random place, so successive sweeps
// cover the whole space), and returns how many it dropped.
func (s *store) sweep(perShard int) int {
	t := now()
	dropped := 0
	for i := range s.shards {
		sh := &s.shards[i]
		sh.mu.Lock()
		k := 0
		for key, v := range sh.m {
			if k == perShard {
				break
			}
			k++
			if v.expired(t) {
				delete(sh.m, key)
				dropped++
			}
		}
		sh.mu.Unlock()
	}
	return dropped
}

// size is the number of keys, expired ones not yet dropped included.
func (s *store) size() int {
	n := 0
	for i := range s.shards {
		sh := &s.shards[i]
		sh.mu.RLock()
		n += len(sh.m)
		sh.mu.RUnlock()
	}
	return n
}
