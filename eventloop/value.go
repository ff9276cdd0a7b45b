package eventloop

// Value returns the value kept on the Loop under key, made by init the
// first time key is asked for: state that a layer built on the Loop keeps
// once per Loop (package netloop counts a Loop's Conns in one). key must
// be comparable; use a value of an unexported type, as with
// context.Context values, so that layers do not collide. If two
// goroutines ask for a new key at once, both may run init, and both get
// the one value kept. Safe from any goroutine. A nil or zero Loop keeps
// nothing: it returns nil, as does a key never kept when init is nil.
func (l *Loop) Value(key any, init func() any) any {
	if l == nil || l.p == nil {
		return nil
	}
	if v, ok := l.values.Load(key); ok || init == nil {
		return v
	}
	v, _ := l.values.LoadOrStore(key, init())
	return v
}
