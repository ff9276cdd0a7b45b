package poll

import (
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

func TestSmoke(t *testing.T) {
	p, err := New()
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	fds, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_STREAM|unix.SOCK_NONBLOCK|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Close(fds[0])
	defer unix.Close(fds[1])
	if err := p.Register(Fd(fds[0]), 1, Readable, Edge); err != nil {
		t.Fatal(err)
	}
	r, s := NewRegistration()
	if err := p.Register(r, 2, Readable, Level); err != nil {
		t.Fatal(err)
	}
	ev := NewEvents(8)
	unix.Write(fds[1], []byte("hi"))
	go s.SetReadiness(Readable)
	got := map[Token]Ready{}
	deadline := time.Now().Add(2 * time.Second)
	for len(got) < 2 && time.Now().Before(deadline) {
		if _, err := p.Poll(ev, time.Second); err != nil {
			t.Fatal(err)
		}
		for e := range ev.All() {
			got[e.Token] |= e.Ready
		}
	}
	if got[1] != Readable || got[2] != Readable {
		t.Fatalf("got %v", got)
	}
	// level stays ready
	n, _ := p.Poll(ev, 0)
	if n != 1 || ev.At(0).Token != 2 {
		t.Fatalf("level: %d %v", n, ev.At(0))
	}
	s.UnsetReadiness(Readable)
	n, _ = p.Poll(ev, 0)
	if n != 0 {
		t.Fatalf("after unset: %d", n)
	}
	start := time.Now()
	s.DelayReadiness(Readable, 20*time.Millisecond)
	n, _ = p.Poll(ev, -1)
	el := time.Since(start)
	if n != 1 || el < 20*time.Millisecond {
		t.Fatalf("delay: n=%d el=%v", n, el)
	}
	t.Logf("delay latency %v stats %+v", el, p.Stats())
}
