package poll_test

import (
	"fmt"
	"time"

	"golang.org/x/sys/unix"

	"github.com/unipoll/unipoll/poll"
	"github.com/unipoll/unipoll/socket"
)

// Poll a socket and a user-space Registration with one Poll.
func Example() {
	p, err := poll.New()
	if err != nil {
		panic(err)
	}
	defer p.Close()

	// A descriptor: one end of a socket pair.
	a, b, err := socket.Pair()
	if err != nil {
		panic(err)
	}
	defer a.Close()
	defer b.Close()
	if err := p.Register(a, 1, poll.Readable, poll.Edge); err != nil {
		panic(err)
	}

	// A user-space source, made ready from another goroutine.
	reg, set := poll.NewRegistration()
	defer reg.Close()
	if err := p.Register(reg, 2, poll.Readable, poll.Edge); err != nil {
		panic(err)
	}

	_, _ = b.Write([]byte("hello"))
	go func() { _ = set.SetReadiness(poll.Readable) }()

	events := poll.NewEvents(16)
	seen := map[poll.Token]poll.Ready{}
	for len(seen) < 2 {
		if _, err := p.Poll(events, time.Second); err != nil {
			panic(err)
		}
		for ev := range events.All() {
			seen[ev.Token] = ev.Ready
		}
	}
	fmt.Println("socket:", seen[1])
	fmt.Println("registration:", seen[2])
	// Output:
	// socket: Readable
	// registration: Readable
}

// A Registration registered as Level is reported on every Poll while it is
// ready, until UnsetReadiness (registered as Edge, it would be reported
// once per SetReadiness).
func ExampleNewRegistration() {
	p, _ := poll.New()
	defer p.Close()
	reg, set := poll.NewRegistration()
	defer reg.Close()
	_ = p.Register(reg, 7, poll.Readable|poll.Writable, poll.Level)

	_ = set.SetReadiness(poll.Writable)
	events := poll.NewEvents(4)
	for i := 0; i < 2; i++ {
		n, _ := p.Poll(events, 0)
		fmt.Println(n, events.At(0))
	}
	_ = set.UnsetReadiness(poll.Writable)
	n, _ := p.Poll(events, 0)
	fmt.Println(n)
	// Output:
	// 1 Event{Token: 7, Ready: Writable}
	// 1 Event{Token: 7, Ready: Writable}
	// 0
}

// Two sources under one Token are accepted, and each is reported under
// it, so their events cannot be told apart. A test built with -tags
// unipoll_debug can assert that this never happens in its program:
// Stats.SharedTokens counts the second Register (a normal build counts
// nothing).
func ExampleToken_shared() {
	p, _ := poll.New()
	defer p.Close()
	a, setA := poll.NewRegistration()
	defer a.Close()
	b, setB := poll.NewRegistration()
	defer b.Close()
	_ = p.Register(a, 7, poll.Readable, poll.Edge)
	_ = p.Register(b, 7, poll.Readable, poll.Edge) // no error

	_ = setA.SetReadiness(poll.Readable)
	_ = setB.SetReadiness(poll.Readable)
	events := poll.NewEvents(4)
	n, _ := p.Poll(events, 0)
	fmt.Println(n, events.At(0), events.At(1))
	// Output: 2 Event{Token: 7, Ready: Readable} Event{Token: 7, Ready: Readable}
}

// DelayReadiness makes a Registration ready later; the Poll's own timeout
// drives it, with no goroutine or OS timer per delay.
func ExampleSetReadiness_DelayReadiness() {
	p, _ := poll.New()
	defer p.Close()
	reg, set := poll.NewRegistration()
	defer reg.Close()
	_ = p.Register(reg, 1, poll.Readable, poll.Edge)

	start := time.Now()
	_ = set.DelayReadiness(poll.Readable, 10*time.Millisecond)
	events := poll.NewEvents(1)
	n, _ := p.Poll(events, -1)
	fmt.Println(n, events.At(0).Ready, time.Since(start) >= 10*time.Millisecond)
	// Output: 1 Readable true
}

// Oneshot disarms a source after one event until Reregister.
func ExamplePollOpt_oneshot() {
	p, _ := poll.New()
	defer p.Close()
	reg, set := poll.NewRegistration()
	defer reg.Close()
	_ = p.Register(reg, 1, poll.Readable, poll.Oneshot)
	_ = set.SetReadiness(poll.Readable)

	events := poll.NewEvents(1)
	n1, _ := p.Poll(events, 0)
	n2, _ := p.Poll(events, 0) // disarmed
	_ = p.Reregister(reg, 1, poll.Readable, poll.Oneshot)
	n3, _ := p.Poll(events, 0) // re-armed, still ready
	fmt.Println(n1, n2, n3)
	// Output: 1 0 1
}

func ExampleReady_String() {
	fmt.Println(poll.Readable | poll.Hup)
	fmt.Println(poll.Ready(0))
	// Output:
	// Readable|Hup
	// Empty
}

// Close wakes a goroutine blocked in Poll.
func ExamplePoll_Close() {
	p, _ := poll.New()
	done := make(chan error)
	go func() {
		_, err := p.Poll(poll.NewEvents(1), -1)
		done <- err
	}()
	_ = p.Close()
	fmt.Println(<-done)
	// Output: unipoll: closed
}

// A raw descriptor is registered as an Fd; the caller keeps ownership.
func ExampleFd() {
	p, _ := poll.New()
	defer p.Close()
	var fds [2]int
	if err := unix.Pipe(fds[:]); err != nil {
		panic(err)
	}
	defer unix.Close(fds[0])
	defer unix.Close(fds[1])
	_ = unix.SetNonblock(fds[0], true)

	_ = p.Register(poll.Fd(fds[0]), 9, poll.Readable, poll.Level)
	_, _ = unix.Write(fds[1], []byte("x"))
	events := poll.NewEvents(1)
	n, _ := p.Poll(events, time.Second)
	fmt.Println(n, events.At(0))
	_ = p.Deregister(poll.Fd(fds[0])) // before closing it
	// Output: 1 Event{Token: 9, Ready: Readable}
}

// A TimerQueue keeps deadlines on the Poll's own timing wheel, each with a
// key of the caller's (here, connection numbers whose idle time is up), and
// hands the keys out in deadline order once they pass.
func ExampleTimerQueue() {
	p, _ := poll.New()
	defer p.Close()
	q := poll.NewTimerQueue(0)
	defer q.Close()
	_ = p.Register(q, 1, poll.Readable, poll.Edge)

	_, _ = q.Add(20*time.Millisecond, 7) // connection 7
	_, _ = q.Add(10*time.Millisecond, 3) // connection 3
	later, _ := q.Add(time.Hour, 9)
	key, ok := q.Remove(later) // connection 9 was active again
	fmt.Println("removed", key, ok)

	events := poll.NewEvents(4)
	for got := 0; got < 2; {
		_, _ = p.Poll(events, -1)
		for range events.All() {
			for key, ok := q.TryRecv(); ok; key, ok = q.TryRecv() {
				fmt.Println("idle:", key)
				got++
			}
		}
	}
	// Output:
	// removed 9 true
	// idle: 3
	// idle: 7
}
