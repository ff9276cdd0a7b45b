package poll

// Sources that share a Token.
//
// A Poll accepts two sources registered under one Token, as mio does: it
// never interprets a Token, and looking for one in use on every Register
// would cost a lookup that nothing else needs. But the caller can then no
// longer tell the sources' events apart, which is almost always a bug (a
// token reused before its source was deregistered, a slot index without
// its generation). Built with the unipoll_debug tag, the Poll knows the
// Token of each source registered with it and counts each Register or
// Reregister that gives a source a Token another registered source holds
// (Stats.SharedTokens). A normal build keeps nothing and counts nothing:
// tokenTable is empty and every call below is compiled away.
//
// A source is a descriptor (by number) or a Registration (by node; a
// TimerQueue is one). The table's mutex is a leaf lock, taken with regMu
// (descriptors) or a Registration's mu held and nothing taken under it.

// tokenSource names a registered source in the table.
type tokenSource struct {
	fd   int
	node *regNode // nil for a descriptor
}

// tokenRegistered notes that s is registered under t now, replacing its
// earlier Token if it had one, and counts it if another source holds t.
func (p *Poll) tokenRegistered(s tokenSource, t Token) {
	if debugChecks && p.tokens.set(s, t) {
		p.stats.sharedTokens.Add(1)
	}
}

// tokenDeregistered notes that s is no longer registered.
func (p *Poll) tokenDeregistered(s tokenSource) {
	if debugChecks {
		p.tokens.drop(s)
	}
}
