//go:build linux

package child

import (
	"errors"
	"fmt"
	"os"
	"sync"
	"sync/atomic"
	"syscall"

	"golang.org/x/sys/unix"

	"github.com/unipoll/unipoll/internal/onpoll/ureg"
	"github.com/unipoll/unipoll/internal/sigrelay"
	"github.com/unipoll/unipoll/poll"
)

// The SIGCHLD fallback, for systems without a usable pidfd (or when
// UseSIGCHLD asks for it). A process-wide table lists the watched pids
// whose exit has not been seen. The table subscribes to SIGCHLD through
// the relay (internal/sigrelay) while any fallback Watcher lives, and each
// delivery scans it: waitid(P_PID, pid, WEXITED|WNOWAIT|WNOHANG) for each
// pid, which looks without reaping, and only at that pid. Never wait(-1)
// or P_ALL: children nobody watches (plain os/exec ones) are left for their
// owners, and a zombie nobody has reaped yet cannot hide the others.
//
// Invariants:
//
//	T1. table.mu guards table.pids. A Watcher is in table.pids[pid] from
//	    Watch until it is marked (its exit, or its reaping, seen) or
//	    closed. It is marked first and removed after, so a pid that has
//	    left the table has every Watcher of it ready: ReadStats lets a
//	    program (and the tests) rely on that.
//	T2. table is subscribed to SIGCHLD exactly while table.users > 0.
//	    subMu serialises the changes of users with Subscribe and
//	    Unsubscribe, and is never taken on the relay's goroutine, so an
//	    Unsubscribe that waits for that goroutine (sigrelay R5) cannot wait
//	    for itself.
//	T3. No exit is missed: Watch subscribes, then enters the pid in the
//	    table, then looks once itself. An exit before the look is found by
//	    the look; an exit after it sends a SIGCHLD to a process that is
//	    subscribed, and the scan that follows (sigrelay R3) finds the pid
//	    in the table.
//	T4. A Watcher's readiness is set once, by whoever first sees the exit
//	    (a scan, or Status), under sigchldWatch.mu: in edge mode the exit is
//	    one edge.
//	T5. No lock is held across another: the scan copies the Watchers
//	    (each knows its pid) under table.mu, calls waitid without it, marks
//	    the copied Watchers of a pid that exited under their own mu, then
//	    takes table.mu again to remove them (T1). Only Watchers that were
//	    in the table before the look are marked by it: one entered later
//	    looks for itself (T3).
//
// Limits: the table knows processes by pid. If an owner reaps a process
// before any scan saw its exit, the next scan (the reaped child's SIGCHLD
// brings one) finds ECHILD: the Watcher is made Readable and leaves the
// table all the same, and its Status returns ErrReaped. Should the pid
// have been reused by a new child of this process in between, the old
// Watcher would follow the new process. Owners that reap only after the
// Watcher's event (the way this package is meant to be used) never meet
// this; the pidfd path has no such window. A Watcher of the new process
// itself is not confused with the old one: it entered the table after the
// old process was reaped, so after any scan's copy that could have found
// the old exit (T5).
//
// Cost: a scan is one waitid per watched pid (Linux 5.13 and later find the
// pid directly; earlier kernels walk the children for each call). SIGCHLDs
// that arrive during a scan coalesce into one more scan (sigrelay R3), so
// the work follows the rate of scans, not the number of exits.
var table struct {
	mu    sync.Mutex
	pids  map[int][]*sigchldWatch // T1
	users int                     // T2
	buf   []*sigchldWatch         // the scan's copy of the Watchers (relay goroutine only)
}

var subMu sync.Mutex // T2

// scans counts the scans made (ReadStats).
var scans atomic.Uint64

// tableSub is the table's subscription to SIGCHLD.
type tableSub struct{}

func (tableSub) Deliver(syscall.Signal) { scan() }

// sigchldWatch is one Watcher's part of the fallback.
type sigchldWatch struct {
	pid  int
	proc *os.Process
	r    *ureg.Reg

	mu   sync.Mutex // T4: guards the fields below
	seen bool       // the exit was seen: st holds it and readiness is set
	gone bool       // reaped before its exit was seen: readiness is set
	st   ExitStatus
}

func newSigchldWatch(p *os.Process) (*sigchldWatch, error) {
	// Refuse what can never be watched before subscribing to anything.
	if _, _, err := peekID(unix.P_PID, p.Pid); err != nil {
		if errors.Is(err, ErrReaped) && !errors.Is(p.Signal(syscall.Signal(0)), os.ErrProcessDone) {
			err = ErrNotChild
		}
		return nil, err
	}
	m := &sigchldWatch{pid: p.Pid, proc: p, r: ureg.New()}
	use(1) // T3: subscribe first
	table.mu.Lock()
	if table.pids == nil {
		table.pids = map[int][]*sigchldWatch{}
	}
	table.pids[m.pid] = append(table.pids[m.pid], m)
	table.mu.Unlock()
	m.look() // T3: then look
	return m, nil
}

// use adds delta to the table's users and subscribes or unsubscribes as
// the count leaves or reaches zero (T2).
func use(delta int) {
	subMu.Lock()
	defer subMu.Unlock()
	table.mu.Lock()
	before := table.users
	table.users += delta
	after := table.users
	table.mu.Unlock()
	switch {
	case before == 0 && after > 0:
		sigrelay.Subscribe(syscall.SIGCHLD, tableSub{})
	case before > 0 && after == 0:
		sigrelay.Unsubscribe(syscall.SIGCHLD, tableSub{})
	}
}

// scan looks at every watched pid once; it runs on the relay's goroutine
// for SIGCHLD (T5). It copies the Watchers before it looks, so that a
// Watcher entered after the copy, maybe of a new process that was given
// the pid of one this scan finds exited, is left to its own look (T3).
func scan() {
	scans.Add(1)
	table.mu.Lock()
	ws := table.buf[:0]
	for _, list := range table.pids {
		ws = append(ws, list...) // a pid's Watchers stay side by side
	}
	table.buf = ws
	table.mu.Unlock()
	if f := scanCopied.Load(); f != nil {
		(*f)()
	}
	for i := 0; i < len(ws); {
		pid, j := ws[i].pid, i+1
		for j < len(ws) && ws[j].pid == pid {
			j++
		}
		st, exited, err := peekID(unix.P_PID, pid)
		if err != nil || exited {
			for _, m := range ws[i:j] {
				m.mark(st, err) // T1: marked, then removed
				m.unlist()
			}
		}
		i = j
	}
	clear(ws) // keep no closed Watcher reachable until the next scan
}

// scanCopied, when a test sets it, runs in scan between its copy of the
// table and its first look.
var scanCopied atomic.Pointer[func()]

// look checks this Watcher's pid itself (Watch, and Status before a scan
// saw the exit).
func (m *sigchldWatch) look() {
	st, exited, err := peekID(unix.P_PID, m.pid)
	if err == nil && !exited {
		return
	}
	m.mark(st, err) // T1: marked, then removed
	m.unlist()
}

// unlist removes m from the table (T1).
func (m *sigchldWatch) unlist() {
	table.mu.Lock()
	defer table.mu.Unlock()
	ws := table.pids[m.pid]
	for i, x := range ws {
		if x == m {
			ws = append(ws[:i], ws[i+1:]...)
			break
		}
	}
	if len(ws) == 0 {
		delete(table.pids, m.pid)
	} else {
		table.pids[m.pid] = ws
	}
}

// mark records the exit (or, with err, that the process was reaped before
// its exit was seen) and makes the Watcher ready, once (T4).
func (m *sigchldWatch) mark(st ExitStatus, err error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.seen || m.gone {
		return
	}
	if err != nil {
		m.gone = true
	} else {
		m.seen, m.st = true, st
	}
	m.r.Set(poll.Readable)
}

func (m *sigchldWatch) peek() (ExitStatus, bool, error) {
	m.mu.Lock()
	seen, gone, st := m.seen, m.gone, m.st
	m.mu.Unlock()
	if !seen && !gone {
		m.look()
		m.mu.Lock()
		seen, gone, st = m.seen, m.gone, m.st
		m.mu.Unlock()
	}
	switch {
	case gone:
		return ExitStatus{}, false, ErrReaped
	case seen:
		return st, true, nil
	}
	return ExitStatus{}, false, nil
}

// register passes the interest on as it is: the Registration is only ever
// set Readable, so an interest without it is never reported.
func (m *sigchldWatch) register(p *poll.Poll, t poll.Token, interest poll.Ready, opts poll.PollOpt) error {
	return m.r.Register(p, t, interest, opts)
}

func (m *sigchldWatch) reregister(p *poll.Poll, t poll.Token, interest poll.Ready, opts poll.PollOpt) error {
	return m.r.Reregister(p, t, interest, opts)
}

func (m *sigchldWatch) deregister(p *poll.Poll) error { return m.r.Deregister(p) }

func (m *sigchldWatch) signal(sig syscall.Signal) error {
	if err := m.proc.Signal(sig); err != nil {
		if errors.Is(err, os.ErrProcessDone) {
			return os.ErrProcessDone
		}
		return fmt.Errorf("signal pid %d: %w", m.pid, err)
	}
	return nil
}

func (m *sigchldWatch) close() error {
	err := m.r.Close()
	m.unlist()
	use(-1)
	return err
}

// readStats is ReadStats on Linux.
func readStats() Stats {
	table.mu.Lock()
	defer table.mu.Unlock()
	return Stats{Watchers: table.users, Watched: len(table.pids), Scans: scans.Load()}
}
