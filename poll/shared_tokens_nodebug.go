//go:build !unipoll_debug

package poll

// tokenTable is empty in a normal build: nothing is kept, and the calls
// of shared_tokens.go, guarded by debugChecks, are compiled away.
type tokenTable struct{}

func (*tokenTable) set(tokenSource, Token) bool { return false }
func (*tokenTable) drop(tokenSource)            {}
func (*tokenTable) reset()                      {}
