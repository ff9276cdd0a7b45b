package poll

import (
	"errors"
	"fmt"
	"sync/atomic"

	"golang.org/x/sys/unix"

	"github.com/unipoll/unipoll/internal/base/table"
	"github.com/unipoll/unipoll/sys"
)

// Fd is a raw file descriptor as an Evented. The caller keeps ownership: Poll
// never closes it, and it must be deregistered before it is closed (a
// descriptor number closed while registered and then reused is refused with
// ErrAlreadyRegistered).
//
// Fd works with any descriptor the backend can watch: sockets, pipes,
// eventfds, terminals. Regular files are refused by epoll with ErrInvalidFd.
//
// Registered with Edge, an Fd cannot see its own EAGAIN: call Drained
// after an operation on it returns EAGAIN, as the rule under Edge says, so
// that an edge is reported once on every backend and none is lost.
type Fd int

// Register implements Evented.
func (fd Fd) Register(p *Poll, t Token, interest Ready, opts PollOpt) error {
	if err := p.check(); err != nil {
		return err
	}
	return p.registerFd(int(fd), t, interest, opts)
}

// Reregister implements Evented.
func (fd Fd) Reregister(p *Poll, t Token, interest Ready, opts PollOpt) error {
	if err := p.check(); err != nil {
		return err
	}
	return p.reregisterFd(int(fd), t, interest, opts)
}

// Deregister implements Evented.
func (fd Fd) Deregister(p *Poll) error {
	if err := p.check(); err != nil {
		return err
	}
	return p.deregisterFd(int(fd))
}

// Drained tells p that a pass on fd for the readiness in r (Readable,
// Writable or both) has just ended: an operation returned EAGAIN, or a
// read of a stream was short. Under Edge, portable code calls it then (see
// Edge): where the kernel triggers edges natively (epoll, kqueue) it does
// nothing at all, and where the backend emulates them (poll(2)) the
// reported condition stays out of the kernel's view until the pass ends,
// so that an edge is reported once rather than on every Poll. The socket
// package's types call it themselves. Reregister ends every pass as well.
func (fd Fd) Drained(p *Poll, r Ready) error {
	if p == nil || p.sel == nil {
		return errNilPoll
	}
	if p.nativeEdge {
		return nil
	}
	return p.drainedFd(int(fd), r)
}

func (p *Poll) drainedFd(fd int, r Ready) error {
	if r == 0 || r&^allReady != 0 {
		return wrapf(ErrInvalidArgument, "Drained(%s)", r)
	}
	if err := checkFd(fd); err != nil {
		return err
	}
	err := p.sel.Drained(fd, uint32(r))
	switch {
	case err == nil:
		return nil
	case errors.Is(err, sys.ErrClosed), p.closed.Load():
		return ErrClosed
	case errors.Is(err, unix.ENOENT):
		return fmt.Errorf("drained descriptor %d: %w: %w", fd, ErrNotRegistered, err)
	}
	return selectorError("drained", fd, err)
}

// fdReg is the Poll's record of one registered descriptor.
type fdReg struct {
	token    Token
	interest Ready
	opts     PollOpt
	disarmed bool // oneshot and already reported; a parked oneshot registration is plain edge in the kernel, so this is what keeps rule 4 for it
	// parked: the kernel reported a hang-up or error that the interest
	// cannot receive. Kernels report those whether asked or not, and they
	// last, so in the caller's level mode they would wake every Poll
	// forever. The kernel registration is switched to edge mode
	// instead: the lasting state is then reported once, while new readiness
	// (an error after a hang-up, data) is a new edge and still arrives. The
	// caller's own mode is restored once an event is delivered.
	parked bool
}

// fdTable is the table (internal/base/table) of registered descriptors,
// indexed by descriptor number: descriptors are small dense integers, so
// an index beats a map on the per-event lookup. A registration's Handle
// (descriptor, generation) is its kernel key, so a kernel event harvested
// for an earlier registration of the same number is told apart as stale.
type fdTable struct {
	tab table.Table[fdReg]
	// live counts the registered descriptors. Written with regMu held,
	// read without it by selectInto: a Poll that has none to ask about
	// need not ask the kernel when it will not block.
	live atomic.Int32
}

func (t *fdTable) reset() {
	t.tab.Reset()
	t.live.Store(0)
}

// fdKey is what the kernel stores for a descriptor: its number and the
// generation of its registration.
func fdKey(h table.Handle) uint64 { return h.Pack() }

// maxFd keeps descriptor numbers in the low 31 bits of a key, clear of the
// selectors' own reserved keys.
const maxFd = 1<<31 - 1

func checkFd(fd int) error {
	if fd < 0 || fd > maxFd {
		return wrapf(ErrInvalidFd, "descriptor %d", fd)
	}
	return nil
}

// selectorError classifies a selector failure: a descriptor the kernel
// cannot watch is ErrInvalidFd, and the system error stays in the chain.
func selectorError(op string, fd int, err error) error {
	if errors.Is(err, unix.EBADF) || errors.Is(err, unix.EPERM) || errors.Is(err, unix.EINVAL) {
		return fmt.Errorf("%s descriptor %d: %w: %w", op, fd, ErrInvalidFd, err)
	}
	return fmt.Errorf("%s descriptor %d: %w", op, fd, err)
}

// lockFdCall checks the arguments of a Register or Reregister of fd and
// takes regMu, open Poll permitting: on nil error the caller holds regMu
// and must release it. It returns opts as validate normalised them.
func (p *Poll) lockFdCall(fd int, t Token, interest Ready, opts PollOpt) (PollOpt, error) {
	opts, err := validate(t, interest, opts)
	if err != nil {
		return opts, err
	}
	if err := checkFd(fd); err != nil {
		return opts, err
	}
	p.regMu.Lock()
	if p.closed.Load() {
		p.regMu.Unlock()
		return opts, ErrClosed
	}
	return opts, nil
}

func (p *Poll) registerFd(fd int, t Token, interest Ready, opts PollOpt) error {
	return p.registerWith(fd, t, interest, opts, p.sel.Add)
}

// registerWith is registerFd with add doing the selector's part (Add, or a
// StreamSelector's AddStream).
func (p *Poll) registerWith(fd int, t Token, interest Ready, opts PollOpt, add func(int, uint64, uint32, sys.Mode) error) error {
	opts, err := p.lockFdCall(fd, t, interest, opts)
	if err != nil {
		return err
	}
	defer p.regMu.Unlock()
	h, r, err := p.fds.tab.Take(uint32(fd)) // checkFd keeps fd below table.MaxLen
	if err != nil {
		return wrapf(ErrAlreadyRegistered, "descriptor %d", fd)
	}
	if err := add(fd, fdKey(h), uint32(interest), sysMode(opts)); err != nil {
		p.fds.tab.Free(h)
		if errors.Is(err, unix.EEXIST) {
			return fmt.Errorf("descriptor %d: %w: %w", fd, ErrAlreadyRegistered, err)
		}
		return selectorError("register", fd, err)
	}
	*r = fdReg{token: t, interest: interest, opts: opts}
	p.fds.live.Add(1)
	p.tokenRegistered(tokenSource{fd: fd}, t)
	return nil
}

func (p *Poll) reregisterFd(fd int, t Token, interest Ready, opts PollOpt) error {
	opts, err := p.lockFdCall(fd, t, interest, opts)
	if err != nil {
		return err
	}
	defer p.regMu.Unlock()
	h, r, ok := p.fds.tab.Current(uint32(fd))
	if !ok {
		return wrapf(ErrNotRegistered, "descriptor %d", fd)
	}
	// A new generation, so that a kernel event harvested under the old
	// interest and not yet delivered is dropped as stale rather than read
	// against the new interest: the kernel was not asked for what the new
	// interest adds, so the event could be incomplete (Readable alone where
	// Readable|Writable is ready). Nothing is lost: every backend's Modify
	// looks at the descriptor afresh and reports what is ready under the
	// new interest. The table stamps the generation only once the kernel
	// has the new key, so a Modify that fails leaves the registration as
	// it was.
	next := table.Handle{Idx: h.Idx, Gen: p.fds.tab.NextGen()}
	if err := p.sel.Modify(fd, fdKey(next), uint32(interest), sysMode(opts)); err != nil {
		return selectorError("reregister", fd, err)
	}
	p.fds.tab.Renew(h)
	*r = fdReg{token: t, interest: interest, opts: opts}
	p.tokenRegistered(tokenSource{fd: fd}, t)
	return nil
}

func (p *Poll) deregisterFd(fd int) error {
	if err := checkFd(fd); err != nil {
		return err
	}
	p.regMu.Lock()
	defer p.regMu.Unlock()
	if p.closed.Load() {
		return ErrClosed
	}
	h, r, ok := p.fds.tab.Current(uint32(fd))
	if !ok {
		return wrapf(ErrNotRegistered, "descriptor %d", fd)
	}
	*r = fdReg{}
	p.fds.tab.Free(h)
	p.fds.live.Add(-1)
	p.tokenDeregistered(tokenSource{fd: fd})
	// A descriptor closed before Deregister has already left the kernel's
	// set (EBADF, ENOENT); the table is consistent either way.
	if err := p.sel.Delete(fd); err != nil && !errors.Is(err, unix.EBADF) && !errors.Is(err, unix.ENOENT) {
		return selectorError("deregister", fd, err)
	}
	return nil
}

// deliverFd turns a kernel event into a user event, or drops it as stale,
// filtered or already reported. Called by Poll with regMu held.
func (p *Poll) deliverFd(key uint64, kernel Ready, ev *Events) {
	r, ok := p.fds.tab.Lookup(table.Unpack(key))
	if !ok {
		p.stats.stale.Add(1)
		return
	}
	fd := int(uint32(key))
	if r.disarmed {
		return
	}
	ready := maskReady(kernel, r.interest)
	if ready == 0 {
		switch {
		case r.parked:
		case kernel&(Error|Hup) != 0:
			// A pure edge registration needs no parking: a lasting state
			// makes one edge (the poll(2) backend's emulation rests it).
			// Level ones would repeat it, oneshot ones re-armed below too.
			if r.opts != Edge && p.sel.Modify(fd, key, uint32(r.interest), sys.Edge) == nil {
				r.parked = true
			}
		case r.opts.IsOneshot():
			// The kernel disarmed it for readiness the caller did not ask
			// for; re-arm so the readiness they did ask for is not lost.
			_ = p.sel.Modify(fd, key, uint32(r.interest), sysMode(r.opts))
		}
		return
	}
	switch {
	case r.opts.IsOneshot():
		r.disarmed = true // stays parked, if it is, until Reregister
	case r.parked:
		if p.sel.Modify(fd, key, uint32(r.interest), sysMode(r.opts)) == nil {
			r.parked = false
		}
	}
	ev.push(r.token, ready)
}

// maskReady keeps what the caller asked for. An error makes the source
// readable and writable (the operation returns the error) and a hang-up makes
// it readable (the read returns EOF), so a caller who asked only for
// Readable or Writable still hears about them.
func maskReady(kernel, interest Ready) Ready {
	r := kernel
	if kernel&Error != 0 {
		r |= Readable | Writable
	}
	if kernel&Hup != 0 {
		r |= Readable
	}
	return r & interest
}
