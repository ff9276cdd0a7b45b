package netloop

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"runtime"
	"sync"
	"sync/atomic"
	"time"

	"github.com/unipoll/unipoll/eventloop"
)

// Group is N Loops serving one program, one goroutine each, for servers
// that use every core: listeners are shared among them (see
// Group.ListenTCP), and each connection then lives on one Loop.
//
// The zero Group is not usable: its methods return an error wrapping
// ErrInvalidArgument. Make Groups with NewGroup.
type Group struct {
	loops   []*eventloop.Loop
	balance Balance
	next    atomic.Uint64  // round-robin position
	pending []atomic.Int64 // connections handed to each Loop, not yet added
	pauses  atomic.Uint64  // AcceptPauses
	log     *slog.Logger   // GroupConfig.Logger; nil: silent
	closed  atomic.Bool    // Close was called

	lnMu      sync.Mutex
	listeners map[*Listener]struct{} // open, guarded by lnMu
	shut      bool                   // guarded by lnMu: Shutdown began; no new Listener
}

// GroupConfig configures a Group. The zero value means the defaults.
type GroupConfig struct {
	// Loops is the number of Loops. Default runtime.GOMAXPROCS(0).
	Loops int
	// Loop configures each Loop.
	Loop eventloop.Config
	// Balance chooses the Loop that a connection accepted by a shared
	// listener goes to. Default RoundRobin.
	Balance Balance
	// Logger receives the Group's records: accept failures and the pause
	// after one (Warn: "netloop: accept failed", "netloop: out of
	// descriptors, accept paused", with err, local and backoff), and a
	// shutdown's drain (Info: "netloop: drain begun", "netloop: drain
	// finished", "netloop: drain forced", with the counts of conns and,
	// when forced, of those left). Nil: silent.
	Logger *slog.Logger
}

// Balance is how a Group hands accepted connections to its Loops.
type Balance uint8

const (
	// RoundRobin hands connections to the Loops in turn.
	RoundRobin Balance = iota
	// LeastConnections hands each connection to the Loop with the fewest
	// Conns (counting connections handed to it and not yet added).
	LeastConnections
)

// NewGroup opens c.Loops Loops.
func NewGroup(c GroupConfig) (*Group, error) {
	if c.Loops < 0 || c.Balance > LeastConnections {
		return nil, fmt.Errorf("%w: netloop: GroupConfig Loops %d, Balance %d", ErrInvalidArgument, c.Loops, c.Balance)
	}
	if c.Loops == 0 {
		c.Loops = runtime.GOMAXPROCS(0)
	}
	// Shutdown waits with Go timers, and the runtime opens a descriptor of
	// its own (its netpoller) at the first timer of the process: one used
	// first in a Shutdown while the process is out of descriptors (the
	// state accept's back-off is for) would crash it. Use one now.
	time.AfterFunc(time.Hour, func() {}).Stop()
	g := &Group{balance: c.Balance, pending: make([]atomic.Int64, c.Loops), log: c.Logger,
		listeners: make(map[*Listener]struct{})}
	for range c.Loops {
		l, err := eventloop.New(c.Loop)
		if err != nil {
			return nil, errors.Join(err, g.Close())
		}
		g.loops = append(g.loops, l)
	}
	return g, nil
}

var errZeroGroup = fmt.Errorf("%w: nil or zero netloop.Group (make one with netloop.NewGroup)", ErrInvalidArgument)

// Loops returns the Group's Loops.
func (g *Group) Loops() []*eventloop.Loop {
	if g == nil {
		return nil
	}
	return g.loops
}

// Run runs every Loop, each on its own goroutine (the first on the
// caller's), with h as Run's Handler, and returns when all have returned:
// after Shutdown (once its drain is over), Close or ctx's end, or when
// one fails (the others are then shut down). It returns the first error,
// or ctx's.
func (g *Group) Run(ctx context.Context, h eventloop.Handler) error {
	if g == nil || len(g.loops) == 0 {
		return errZeroGroup
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	errs := make([]error, len(g.loops))
	var wg sync.WaitGroup
	for i, l := range g.loops[1:] {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if errs[i+1] = l.Run(ctx, h); errs[i+1] != nil {
				cancel()
			}
		}()
	}
	if errs[0] = g.loops[0].Run(ctx, h); errs[0] != nil {
		cancel()
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil && !errors.Is(err, context.Canceled) {
			return err
		}
	}
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	return nil
}

// Close closes every Loop (see eventloop.Loop.Close), and with them the
// Group's listeners and Conns, at once: queued output is dropped (see
// Shutdown for a graceful end). Closing twice returns an error matching
// ErrClosed.
func (g *Group) Close() error {
	if g == nil {
		return errZeroGroup
	}
	g.closed.Store(true)
	var errs []error
	for _, l := range g.loops {
		errs = append(errs, l.Close())
	}
	return errors.Join(errs...)
}

// AcceptPauses counts the times a listener of the Group paused accepting
// after accept failed (out of descriptors, typically).
func (g *Group) AcceptPauses() uint64 {
	if g == nil {
		return 0
	}
	return g.pauses.Load()
}

// pick chooses the Loop for a new connection, and counts it as pending
// there until the accept function has run.
func (g *Group) pick() int {
	i := 0
	switch g.balance {
	case LeastConnections:
		best := int64(-1)
		for k, l := range g.loops {
			n := int64(Conns(l)) + g.pending[k].Load()
			if best < 0 || n < best {
				i, best = k, n
			}
		}
	default:
		i = int((g.next.Add(1) - 1) % uint64(len(g.loops)))
	}
	g.pending[i].Add(1)
	return i
}
