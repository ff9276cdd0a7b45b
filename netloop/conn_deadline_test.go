package netloop

import (
	"errors"
	"io"
	"net"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/unipoll/unipoll/eventloop"
	"github.com/unipoll/unipoll/internal/testsupport"
	"github.com/unipoll/unipoll/socket"
)

// tcpClientPair returns the server end of a loopback TCP connection for
// a Conn and a blocking client end as a net.Conn.
func tcpClientPair(t *testing.T) (*socket.TCPConn, net.Conn) {
	t.Helper()
	ln, err := socket.ListenTCP("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer ln.Close()
	client, err := net.Dial("tcp", ln.Addr().String())
	require.NoError(t, err)
	t.Cleanup(func() { _ = client.Close() })
	var s *socket.TCPConn
	eventually(t, "the connection to be accepted", func() bool {
		s, err = ln.Accept()
		if err != nil && !errors.Is(err, socket.ErrWouldBlock) {
			t.Fatalf("Accept: %v", err)
		}
		return err == nil
	})
	return s, client
}

// streamPair is clientPair or tcpClientPair, by name.
func streamPair(t *testing.T, transport string) (Stream, net.Conn) {
	t.Helper()
	if transport == "tcp" {
		return tcpClientPair(t)
	}
	return clientPair(t)
}

// closeRec is a CloseHandler that notes when and why its Conn closed.
type closeRec struct {
	ch chan closeAt
}

type closeAt struct {
	at  time.Time
	err error
}

func (r *closeRec) Data(c *Conn, in []byte) int { return len(in) }

func (r *closeRec) Closed(c *Conn, err error) { r.ch <- closeAt{time.Now(), err} }

// probe is one run of a periodic AfterFunc: when it was due and when it
// ran. Its lateness is the Loop's scheduling delay at that moment.
type probe struct{ due, ran time.Time }

// A Conn with both deadlines that keeps writing while its peer stays
// silent is closed by its ReadTimeout: output counts toward IdleTimeout
// only. IdleTimeout is the shorter, so a Conn whose output also counted
// as input would never be closed, and one whose output counted for
// nothing would be closed at IdleTimeout. The Conn writes every few
// milliseconds from an AfterFunc on its Loop, whose runs also measure
// how late the Loop is. The close comes no earlier than ReadTimeout after
// the Conn was added (its last input), and no later than that plus one
// wheel tick, the Loop's measured lateness around the deadline and an
// allowance for the iteration that acts on it.
func TestConnReadTimeoutWhileWriting(t *testing.T) {
	const (
		readTimeout = 300 * time.Millisecond
		idleTimeout = 100 * time.Millisecond
		period      = 5 * time.Millisecond
		tick        = time.Millisecond // poll.Config.WheelTick's default
	)
	for _, transport := range []string{"unix", "tcp"} {
		t.Run(transport, func(t *testing.T) {
			// An attempt whose Loop stalled for IdleTimeout (the machine
			// is shared) may rightly be closed by IdleTimeout: it decides
			// nothing, and the test tries again.
			for attempt := 1; ; attempt++ {
				l := newLoop(t, eventloop.Config{}) // one worker: an AfterFunc may call the Conn's methods
				start(t, l, nil)
				s, client := streamPair(t, transport)
				// The peer sends nothing but reads everything, so that the
				// output keeps leaving (a full socket would stop it).
				drained := make(chan struct{})
				go func() {
					_, _ = io.Copy(io.Discard, client)
					close(drained)
				}()
				h := &closeRec{ch: make(chan closeAt, 1)}
				added0 := time.Now()
				c, err := Add(l, s, h, Config{ReadTimeout: readTimeout, IdleTimeout: idleTimeout})
				require.NoError(t, err)
				added1 := time.Now()
				var probes []probe // the Loop's until done is closed
				done := make(chan struct{})
				var write func(due time.Time) func(*eventloop.Loop)
				write = func(due time.Time) func(*eventloop.Loop) {
					return func(l *eventloop.Loop) {
						probes = append(probes, probe{due, time.Now()})
						if c.Closed() {
							close(done)
							return
						}
						_, err := c.WriteString("tick")
						if err == nil {
							next := time.Now().Add(period)
							_, err = l.AfterFunc(period, write(next))
						}
						if err != nil {
							t.Errorf("writing: %v", err)
							close(done)
						}
					}
				}
				require.NoError(t, l.Post(func(l *eventloop.Loop) { write(time.Now())(l) }))
				var got closeAt
				select {
				case got = <-h.ch:
				case <-time.After(waitLimit):
					t.Fatalf("the Conn was not closed %v after it was added (ReadTimeout %v, IdleTimeout %v)", waitLimit, readTimeout, idleTimeout)
				}
				<-done
				_ = client.Close()
				<-drained

				// The Loop's longest pause in writing: each write is
				// flushed in the Conn's call it triggers, which comes
				// before the next write's turn.
				stall := time.Duration(0)
				for i := 2; i < len(probes); i++ {
					stall = max(stall, probes[i].ran.Sub(probes[i-2].ran))
				}
				if errors.Is(got.err, ErrIdleTimeout) && stall >= idleTimeout && attempt < 3 {
					t.Logf("attempt %d: the Loop stalled %v (IdleTimeout %v): closed by IdleTimeout rightly; again", attempt, stall, idleTimeout)
					continue
				}
				require.ErrorIs(t, got.err, ErrReadTimeout,
					"a Conn that wrote every %v (its Loop's longest pause %v) with a silent peer, ReadTimeout %v, IdleTimeout %v, closed after %v",
					period, stall, readTimeout, idleTimeout, got.at.Sub(added0))
				early := added0.Add(readTimeout).Sub(got.at)
				require.LessOrEqual(t, early, time.Duration(0), "closed %v before ReadTimeout", early)
				// The Loop's lateness around the deadline: the two longest
				// delays of writes due by the close that ran after the
				// deadline's approach (the close waits for two wake-ups,
				// the timer's and the Conn's call it triggers).
				var first, second time.Duration
				for _, p := range probes {
					if !p.ran.Before(added1.Add(readTimeout-2*period)) && !p.due.After(got.at) {
						switch late := p.ran.Sub(p.due); {
						case late > first:
							first, second = late, first
						case late > second:
							second = late
						}
					}
				}
				lateness := first + second
				allowance := 10 * time.Millisecond * time.Duration(testsupport.LoadPerCPU())
				late := got.at.Sub(added1.Add(readTimeout))
				require.LessOrEqual(t, late, tick+lateness+allowance,
					"closed %v after ReadTimeout: more than one tick (%v), the Loop's lateness then (%v) and %v for the iteration", late, tick, lateness, allowance)
				t.Logf("closed by ReadTimeout %v late (the Loop's lateness %v), after %d writes", late, lateness, len(probes))
				return
			}
		})
	}
}

// Conn deadlines: a Conn that hears nothing for ReadTimeout is closed
// with ErrReadTimeout, and an idle one (nothing in, nothing out) with
// ErrIdleTimeout, no earlier than asked; one that keeps receiving lives on
// past its limits. (On a loaded machine the client itself may stall past
// the limit; then, and only then, may its Conn be closed.)
func TestConnDeadlines(t *testing.T) {
	l := newLoop(t, eventloop.Config{Workers: 2})
	start(t, l, nil)

	silent, _ := clientPair(t)
	hs := newEcho()
	begin := time.Now()
	_, err := Add(l, silent, hs, Config{ReadTimeout: 50 * time.Millisecond})
	require.NoError(t, err)

	idle, _ := clientPair(t)
	hi := newEcho()
	_, err = Add(l, idle, hi, Config{IdleTimeout: 80 * time.Millisecond})
	require.NoError(t, err)

	const limit = 150 * time.Millisecond
	busy, client := clientPair(t)
	hb := newEcho()
	// The client's pauses count from the Conn's start (the goroutine may
	// be scheduled late) to the moment the Conn is seen closed (it may
	// stall after its last write).
	added := time.Now()
	_, err = Add(l, busy, hb, Config{ReadTimeout: limit, IdleTimeout: limit})
	require.NoError(t, err)
	stop := make(chan struct{})
	// A pause runs from the start of one write to the end of the next: the
	// Conn may have read the first as soon as it began, and sees nothing
	// of the next until it is done (the client may stall in between, after
	// it decided to write). So the pause is never underestimated.
	var maxGap atomic.Int64    // the client's longest pause between writes
	var lastWrite atomic.Int64 // when its last completed write began, in ns since added
	gapNow := func() time.Duration {
		return max(time.Duration(maxGap.Load()), time.Since(added)-time.Duration(lastWrite.Load()))
	}
	pinged := make(chan error, 1)
	go func() {
		buf := make([]byte, 4)
		for {
			select {
			case <-stop:
				pinged <- nil
				return
			default:
			}
			began := time.Since(added)
			if _, err := client.Write([]byte("ping")); err != nil {
				pinged <- err
				return
			}
			maxGap.Store(int64(gapNow()))
			lastWrite.Store(int64(began))
			if _, err := io.ReadFull(client, buf); err != nil {
				pinged <- err
				return
			}
			time.Sleep(5 * time.Millisecond) // the client's pace, not synchronisation
		}
	}()

	require.ErrorIs(t, <-hs.closed, ErrReadTimeout)
	require.GreaterOrEqual(t, time.Since(begin), 50*time.Millisecond)
	require.ErrorIs(t, <-hi.closed, ErrIdleTimeout)
	require.GreaterOrEqual(t, time.Since(begin), 80*time.Millisecond)
	// The busy one lives past its limits several times over.
	deadline := time.Now().Add(4 * limit)
	for time.Now().Before(deadline) {
		select {
		case err := <-hb.closed:
			gap := gapNow()
			require.GreaterOrEqual(t, gap, limit, "the busy Conn was closed (%v) though its client never paused that long", err)
			close(stop)
			<-pinged
			t.Logf("the client paused %v: its Conn was rightly closed", gap)
			return
		default:
		}
		runtimeGosched()
	}
	// The two that timed out leave the Loop once their removal is over;
	// the busy one stays, unless its client stalled past the limit just
	// now.
	eventually(t, "the timed-out Conns to leave", func() bool { return Conns(l) <= 1 })
	if n := Conns(l); n == 0 {
		err := <-hb.closed
		gap := gapNow()
		require.GreaterOrEqual(t, gap, limit, "the busy Conn was closed (%v) though its client never paused that long", err)
		close(stop)
		<-pinged
		return
	}
	close(stop)
	require.NoError(t, <-pinged)
}
