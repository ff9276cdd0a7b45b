//go:build unipoll_debug

package poll

import "sync"

// tokenTable is the Token of every source registered with a Poll, and how
// many sources hold each Token (shared_tokens.go).
type tokenTable struct {
	mu      sync.Mutex
	of      map[tokenSource]Token
	holders map[Token]int
}

// set registers s under t and reports whether another source holds t.
func (tt *tokenTable) set(s tokenSource, t Token) (shared bool) {
	tt.mu.Lock()
	defer tt.mu.Unlock()
	if tt.of == nil {
		tt.of, tt.holders = map[tokenSource]Token{}, map[Token]int{}
	}
	if old, ok := tt.of[s]; ok {
		tt.release(old)
	}
	shared = tt.holders[t] > 0
	tt.holders[t]++
	tt.of[s] = t
	return shared
}

// drop forgets s; a source it does not know (its Poll was closed since)
// is no error.
func (tt *tokenTable) drop(s tokenSource) {
	tt.mu.Lock()
	defer tt.mu.Unlock()
	if t, ok := tt.of[s]; ok {
		delete(tt.of, s)
		tt.release(t)
	}
}

// reset forgets every source, as a closed Poll does.
func (tt *tokenTable) reset() {
	tt.mu.Lock()
	defer tt.mu.Unlock()
	tt.of, tt.holders = nil, nil
}

func (tt *tokenTable) release(t Token) {
	if tt.holders[t]--; tt.holders[t] == 0 {
		delete(tt.holders, t)
	}
}
