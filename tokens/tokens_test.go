package tokens

import (
	"testing"

	"pgregory.net/rapid"

	"github.com/unipoll/unipoll/poll"
)

// The Table against a map: a Token finds its value until it is removed
// and never after, whatever later takes its slot; Tokens are at least
// MinToken, have bit 63 clear and are never handed out twice; Len and All
// agree with the map; removing a value lets it be collected.
func TestTableModel(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		var tab Table[*int]
		live := map[poll.Token]*int{}
		seen := map[poll.Token]bool{}
		var gone []poll.Token
		t.Repeat(map[string]func(*rapid.T){
			"insert": func(t *rapid.T) {
				v := new(int)
				tok, err := tab.Insert(v)
				if err != nil {
					t.Fatal(err)
				}
				if tok < MinToken || uint64(tok)>>63 != 0 || tok == poll.ReservedToken || seen[tok] {
					t.Fatalf("Insert handed out %#x", uint64(tok))
				}
				seen[tok] = true
				live[tok] = v
			},
			"remove": func(t *rapid.T) {
				if len(live) == 0 {
					t.Skip("empty")
				}
				toks := make([]poll.Token, 0, len(live))
				for tok := range live {
					toks = append(toks, tok)
				}
				tok := rapid.SampledFrom(toks).Draw(t, "tok")
				if v, ok := tab.Remove(tok); !ok || v != live[tok] {
					t.Fatalf("Remove(%#x) = %v, %v", uint64(tok), v, ok)
				}
				delete(live, tok)
				gone = append(gone, tok)
			},
			"": func(t *rapid.T) {
				if tab.Len() != len(live) {
					t.Fatalf("Len = %d, want %d", tab.Len(), len(live))
				}
				for tok, v := range live {
					if got, ok := tab.Get(tok); !ok || got != v {
						t.Fatalf("Get(%#x) = %v, %v", uint64(tok), got, ok)
					}
				}
				for _, tok := range gone {
					if _, ok := tab.Get(tok); ok {
						t.Fatalf("Get(%#x) found a removed value", uint64(tok))
					}
					if _, ok := tab.Remove(tok); ok {
						t.Fatalf("Remove(%#x) removed a value twice", uint64(tok))
					}
				}
				n := 0
				for tok, v := range tab.All() {
					if live[tok] != v {
						t.Fatalf("All yielded %#x", uint64(tok))
					}
					n++
				}
				if n != len(live) {
					t.Fatalf("All yielded %d, want %d", n, len(live))
				}
			},
		})
	})
}

func TestTableForeignTokens(t *testing.T) {
	var tab Table[string]
	tok, err := tab.Insert("a")
	if err != nil {
		t.Fatal(err)
	}
	for _, bad := range []poll.Token{0, 1, MinToken - 1, poll.ReservedToken, tok + 1, tok | 1<<63} {
		if _, ok := tab.Get(bad); ok {
			t.Errorf("Get(%#x) found a value", uint64(bad))
		}
		if _, ok := tab.Remove(bad); ok {
			t.Errorf("Remove(%#x) removed a value", uint64(bad))
		}
	}
	if v, ok := tab.Get(tok); !ok || v != "a" {
		t.Fatalf("Get = %q, %v", v, ok)
	}
}

// All's body may remove what it is given, as a server closing every
// connection does.
func TestTableRemoveWhileWalking(t *testing.T) {
	var tab Table[int]
	for i := range 3000 {
		if _, err := tab.Insert(i); err != nil {
			t.Fatal(err)
		}
	}
	n := 0
	for tok := range tab.All() {
		if _, ok := tab.Remove(tok); !ok {
			t.Fatalf("Remove(%#x) in All", uint64(tok))
		}
		n++
	}
	if n != 3000 || tab.Len() != 0 {
		t.Fatalf("walked %d, %d left", n, tab.Len())
	}
}

// BenchmarkTableGet is the per-event lookup.
func BenchmarkTableGet(b *testing.B) {
	var tab Table[*int]
	toks := make([]poll.Token, 1024)
	for i := range toks {
		tok, err := tab.Insert(new(int))
		if err != nil {
			b.Fatal(err)
		}
		toks[i] = tok
	}
	b.ResetTimer()
	for i := range b.N {
		if _, ok := tab.Get(toks[i&1023]); !ok {
			b.Fatal("lost")
		}
	}
}

// BenchmarkTableInsertRemove is a connection's turnover.
func BenchmarkTableInsertRemove(b *testing.B) {
	var tab Table[*int]
	v := new(int)
	b.ReportAllocs()
	for range b.N {
		tok, err := tab.Insert(v)
		if err != nil {
			b.Fatal(err)
		}
		tab.Remove(tok)
	}
}
