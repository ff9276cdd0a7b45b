package eventloop

import (
	"errors"
	"io"
	"net"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

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

// closeRec is a ConnCloser that notes when and why its Conn closed.
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
				l := newLoop(t, Config{}) // one worker: an AfterFunc may call the Conn's methods
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
				c, err := l.AddConn(s, h, ConnConfig{ReadTimeout: readTimeout, IdleTimeout: idleTimeout})
				require.NoError(t, err)
				added1 := time.Now()
				var probes []probe // the Loop's until done is closed
				done := make(chan struct{})
				var write func(due time.Time) func(*Loop)
				write = func(due time.Time) func(*Loop) {
					return func(l *Loop) {
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
				require.NoError(t, l.Post(func(l *Loop) { write(time.Now())(l) }))
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
