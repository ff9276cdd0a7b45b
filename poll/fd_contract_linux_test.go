package poll

// The contract (ARCHITECTURE.md, rules 1-11) for descriptors, on every backend, in
// every trigger mode, for readable, writable, hang-up and error readiness.
// Rules 1 to 5 here; rule 6 in fd_contract_interest_linux_test.go, rule 7 in
// fd_contract_deregister_linux_test.go, rule 8 in
// fd_contract_wakeup_linux_test.go, rule 11 and the rest in
// fd_calls_linux_test.go.
//
// Most tests are table-driven over readyKinds (fd_kinds_linux_test.go) and
// modes.

import (
	"errors"
	"net"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"
)

// ---------------------------------------------------------------------------
// Rule 1

// Rule 1: readable and writable readiness of one descriptor merge into one
// event, in every mode; and a descriptor is never reported twice in one call
// (pollEvents checks every call).
func TestFdRule1OneEventPerToken(t *testing.T) {
	forEachBackend(t, func(t *testing.T, newPoll newPollFunc) {
		forModes(t, nil, func(t *testing.T, opts PollOpt) {
			a, b := socketPair(t)
			p := newPoll(t)
			ev := NewEvents(16)
			writeFd(t, b, []byte("x"))
			waitKernelReady(t, a, unix.POLLIN)
			require.NoError(t, p.Register(Fd(a), 1, Readable|Writable, opts))
			evs := pollUntil(t, p, ev, func(evs []Event) bool { return len(evs) > 0 }, eventWait)
			require.Equal(t, []Event{{Token: 1, Ready: Readable | Writable}}, evs)
			if opts.IsLevel() && !opts.IsOneshot() {
				for range 3 {
					evs = pollEvents(t, p, ev, 0)
					require.Equal(t, []Event{{Token: 1, Ready: Readable | Writable}}, evs)
				}
			}
		})
	})
}

// ---------------------------------------------------------------------------
// Rules 2, 3, 4: the trigger modes

// Rule 2: edge. One notification when the descriptor becomes ready, none
// after that while nothing new arrives, none once it is drained (or
// filled) and the pass ended as the rule under Edge says, and a new one when it
// becomes ready again. The same on every backend: poll(2) emulates edge
// exactly.
func TestFdRule2Edge(t *testing.T) {
	forEachBackend(t, func(t *testing.T, newPoll newPollFunc) {
		forEachKind(t, newPoll, func(t *testing.T, p *Poll, k readyKind, kf kindFd) {
			ev := NewEvents(8)
			require.NoError(t, p.Register(Fd(kf.fd), 7, k.interest, Edge))
			requireNoEvents(t, p, ev)

			kf.fire(t)
			requireEvent(t, p, ev, 7, k.want)
			requireNoEvents(t, p, ev)
			if kf.clear == nil {
				return
			}
			kf.unfire(t)
			require.NoError(t, Fd(kf.fd).Drained(p, k.interest))
			requireNoEvents(t, p, ev)

			kf.fire(t)
			requireEvent(t, p, ev, 7, k.want)
			requireNoEvents(t, p, ev)
		})
	})
}

// Rule 2 for new data arriving on a descriptor that is still readable: where
// the kernel triggers edges, each arrival is a new edge, so it is not lost
// behind the first one. Where edge is emulated, a caller that has not yet
// read to EAGAIN is still in its read pass and hears nothing new until it
// calls Drained; then what is there is reported at once. Either way nothing is
// lost for a caller who follows the rule.
func TestFdRule2EdgeNewDataWhileReadable(t *testing.T) {
	forEachBackend(t, func(t *testing.T, newPoll newPollFunc) {
		a, b := socketPair(t)
		p := newPoll(t)
		ev := NewEvents(8)
		require.NoError(t, p.Register(Fd(a), 1, Readable, Edge))
		for i := range 5 {
			writeFd(t, b, []byte("x"))
			if i == 0 || !p.edgeEmulated() {
				requireEvent(t, p, ev, 1, Readable)
			}
			requireNoEvents(t, p, ev)
		}
		require.NoError(t, Fd(a).Drained(p, Readable))
		if p.edgeEmulated() {
			requireEvent(t, p, ev, 1, Readable) // still unread
		}
		require.Equal(t, 5, drain(t, a))
		require.NoError(t, Fd(a).Drained(p, Readable))
		requireNoEvents(t, p, ev)
	})
}

// Rule 3: level. An event on every Poll while ready, none once not ready.
func TestFdRule3Level(t *testing.T) {
	forEachBackend(t, func(t *testing.T, newPoll newPollFunc) {
		forEachKind(t, newPoll, func(t *testing.T, p *Poll, k readyKind, kf kindFd) {
			ev := NewEvents(8)
			require.NoError(t, p.Register(Fd(kf.fd), 7, k.interest, Level))
			requireNoEvents(t, p, ev)

			kf.fire(t)
			requireEvent(t, p, ev, 7, k.want)
			for range 5 {
				requireNext(t, p, ev, 7, k.want)
			}
			if kf.clear == nil {
				return
			}
			kf.unfire(t)
			requireNoEvents(t, p, ev)
			kf.fire(t)
			requireEvent(t, p, ev, 7, k.want)
			requireNext(t, p, ev, 7, k.want)
		})
	})
}

// Rule 4: oneshot (level or edge). One event, then nothing, even when new
// readiness arrives, until Reregister re-arms it; then it fires at once if
// still ready (rule 5), and once more only.
func TestFdRule4Oneshot(t *testing.T) {
	forModesKinds(t, []string{"Oneshot", "EdgeOneshot"}, func(t *testing.T, p *Poll, opts PollOpt, k readyKind, kf kindFd) {
		ev := NewEvents(8)
		require.NoError(t, p.Register(Fd(kf.fd), 7, k.interest, opts))
		requireNoEvents(t, p, ev)

		kf.fire(t)
		requireEvent(t, p, ev, 7, k.want)
		requireNoEvents(t, p, ev)
		requireQuietAfterRefire(t, p, ev, kf, k) // new readiness while disarmed: still nothing

		// Re-arm: still ready, so it fires at once, then once only.
		require.NoError(t, p.Reregister(Fd(kf.fd), 7, k.interest, opts))
		requireNext(t, p, ev, 7, k.want)
		requireNoEvents(t, p, ev)

		if kf.clear == nil {
			return
		}
		// Re-arm while not ready: nothing until it becomes ready.
		kf.unfire(t)
		require.NoError(t, p.Reregister(Fd(kf.fd), 7, k.interest, opts))
		requireNoEvents(t, p, ev)
		kf.fire(t)
		requireEvent(t, p, ev, 7, k.want)
		requireNoEvents(t, p, ev)
	})
}

// Rules 2 to 5 for readiness that arrives in steps. The kernel makes some
// changes in steps, and a Poll that looks in between reports the first one
// alone; TestFdRule8WakesBlockedPoll meets a TCP reset that way, by chance.
// Here the test makes the steps itself: a connected UDP socket gets an
// error (an ICMP port unreachable), which is reported, and then hangs up
// (shutdown). The hang-up is new readiness: Edge reports it in one more
// event, Level on the next Poll, Oneshot only after Reregister. Without
// Readable in the interest the hang-up is the only new thing, so an edge
// emulation that took it for reported along with the error would lose it.
func TestFdReadinessInSteps(t *testing.T) {
	cases := []struct{ interest, first, whole Ready }{
		{Readable | Writable | Error | Hup, Readable | Writable | Error, Readable | Writable | Error | Hup},
		{Writable | Error | Hup, Writable | Error, Writable | Error | Hup},
		{Error | Hup, Error, Error | Hup},
	}
	forEachBackend(t, func(t *testing.T, newPoll newPollFunc) {
		forModes(t, nil, func(t *testing.T, opts PollOpt) {
			for _, c := range cases {
				t.Run(c.interest.String(), func(t *testing.T) {
					t.Parallel()
					fd := refusedUDP(t)
					p := newPoll(t)
					ev := NewEvents(8)
					require.NoError(t, p.Register(Fd(fd), 5, c.interest, opts))
					requireNext(t, p, ev, 5, c.first)
					if opts.IsOneshot() || opts.IsEdge() {
						// Nothing new yet; where edge is emulated, the
						// registration now rests (sys/poll_rest_unix.go).
						requireNoEvents(t, p, ev)
					} else {
						requireNext(t, p, ev, 5, c.first)
					}
					require.NoError(t, unix.Shutdown(fd, unix.SHUT_RDWR))
					require.NoError(t, tryWaitShows(fd, unix.POLLHUP, eventWait))
					requireRest(t, p, fd, 5, c.interest, opts, c.whole)
					soErr, err := unix.GetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_ERROR)
					require.NoError(t, err)
					require.Equal(t, unix.ECONNREFUSED, unix.Errno(soErr), "the error was the ICMP's")
				})
			}
		})
	})
}

// refusedUDP returns a non-blocking UDP socket connected to a 127.0.0.1 port
// nothing listens on, once a datagram it sent there has come back as an
// ICMP port unreachable: the socket has a pending error (ECONNREFUSED,
// POLLERR) and is writable, with no hang-up. ICMP errors are rate limited,
// so the datagram is sent again until the error shows (a send may also
// return the error of an earlier one, which takes it).
func refusedUDP(t testing.TB) int {
	t.Helper()
	l, err := net.ListenPacket("udp4", "127.0.0.1:0")
	require.NoError(t, err)
	port := l.LocalAddr().(*net.UDPAddr).Port
	require.NoError(t, l.Close())
	fd, err := unix.Socket(unix.AF_INET, unix.SOCK_DGRAM, 0)
	require.NoError(t, err, "socket")
	fd = nonblocking(t, own(t, fd))
	require.NoError(t, unix.Connect(fd, &unix.SockaddrInet4{Port: port, Addr: [4]byte{127, 0, 0, 1}}))
	for attempt := 1; ; attempt++ {
		_, err := unix.Write(fd, []byte("x"))
		require.True(t, err == nil || errors.Is(err, unix.ECONNREFUSED), "send to closed UDP port %d: %v", port, err)
		if err == nil && tryWaitShows(fd, unix.POLLERR, 200*time.Millisecond) == nil {
			return fd
		}
		require.Less(t, attempt, 25, "no ICMP port unreachable from closed UDP port %d", port)
	}
}

// ---------------------------------------------------------------------------
// Rule 5

// Rule 5: Register while already ready is reported by the very next Poll,
// in every mode; so is Reregister of a ready descriptor that has already
// been reported (edge, oneshot) or that is reported anyway (level).
func TestFdRule5RegisterWhileReady(t *testing.T) {
	forModesKinds(t, nil, func(t *testing.T, p *Poll, opts PollOpt, k readyKind, kf kindFd) {
		ev := NewEvents(8)
		kf.fire(t)
		waitKernelReady(t, kf.fd, k.raw)
		require.NoError(t, p.Register(Fd(kf.fd), 3, k.interest, opts))
		requireNext(t, p, ev, 3, k.want)
		if opts.IsOneshot() || opts.IsEdge() {
			requireNoEvents(t, p, ev)
		}
		require.NoError(t, p.Reregister(Fd(kf.fd), 4, k.interest, opts))
		requireNext(t, p, ev, 4, k.want)
	})
}
