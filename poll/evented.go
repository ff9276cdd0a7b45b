package poll

// Evented is anything that can be registered with a Poll: a descriptor (Fd,
// the socket package's types), a Registration, and the sources built on them
// (channels, timers, signals, child processes).
//
// Callers use Poll.Register, Poll.Reregister and Poll.Deregister, which check
// their arguments and call these methods; an implementation forwards to the
// Evented it wraps (usually an Fd or a Registration).
type Evented interface {
	Register(p *Poll, t Token, interest Ready, opts PollOpt) error
	Reregister(p *Poll, t Token, interest Ready, opts PollOpt) error
	Deregister(p *Poll) error
}
