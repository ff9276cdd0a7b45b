package poll

// Evented is anything that can be registered with a Poll: a descriptor (Fd,
// the socket package's types), a Registration, and the sources built on
// them (package channel's Sender and Receiver).
//
// Users call Poll.Register, Poll.Reregister and Poll.Deregister, not these
// methods: the Poll methods refuse a nil Evented and a nil, zero or closed
// Poll, and then call the method of the same name. An implementation of
// Evented (a new kind of source) forwards each method to the Evented it is
// built on, usually an Fd or a Registration, which check the token, the
// interest and the mode and keep the Poll's books.
type Evented interface {
	// Register is called by Poll.Register; call that instead.
	Register(p *Poll, t Token, interest Ready, opts PollOpt) error
	// Reregister is called by Poll.Reregister; call that instead.
	Reregister(p *Poll, t Token, interest Ready, opts PollOpt) error
	// Deregister is called by Poll.Deregister; call that instead.
	Deregister(p *Poll) error
}
