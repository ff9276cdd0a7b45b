//go:build unix

package socket

import (
	"testing"

	"golang.org/x/sys/unix"

	"github.com/unipoll/unipoll/poll"
)

// BenchmarkReadPassEnd measures the calls that end a read pass (a short
// read, then a read that would block) after a one-byte write: raw system
// calls as the baseline, then a socket unregistered, registered Level and
// registered Edge, where both reads end the pass (Drained). Compare each
// with raw as a ratio; the socket's cost over raw is its guard, and under
// Edge the Drained call.
func BenchmarkReadPassEnd(b *testing.B) {
	msg, buf := []byte("x"), make([]byte, 64)
	b.Run("raw", func(b *testing.B) {
		fds, err := sysSocketpair(unix.AF_UNIX, unix.SOCK_STREAM, 0)
		if err != nil {
			b.Fatal(err)
		}
		defer unix.Close(fds[0])
		defer unix.Close(fds[1])
		b.ReportAllocs()
		for range b.N {
			if _, err := unix.Write(fds[1], msg); err != nil {
				b.Fatal(err)
			}
			if n, err := unix.Read(fds[0], buf); n != 1 || err != nil {
				b.Fatal(n, err)
			}
			if _, err := unix.Read(fds[0], buf); err != unix.EAGAIN {
				b.Fatal(err)
			}
		}
	})
	for _, mode := range []struct {
		name string
		opts poll.PollOpt // 0: not registered
	}{{"unregistered", 0}, {"level", poll.Level}, {"edge", poll.Edge}} {
		b.Run(mode.name, func(b *testing.B) {
			p, err := poll.New()
			if err != nil {
				b.Fatal(err)
			}
			defer p.Close()
			r, w, err := Pair()
			if err != nil {
				b.Fatal(err)
			}
			defer r.Close()
			defer w.Close()
			if mode.opts != 0 {
				if err := p.Register(r, 1, poll.Readable, mode.opts); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportAllocs()
			for range b.N {
				if _, err := w.Write(msg); err != nil {
					b.Fatal(err)
				}
				if n, err := r.Read(buf); n != 1 || err != nil {
					b.Fatal(n, err)
				}
				if _, err := r.Read(buf); err != ErrWouldBlock {
					b.Fatal(err)
				}
			}
		})
	}
}
