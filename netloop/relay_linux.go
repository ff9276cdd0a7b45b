package netloop

import (
	"errors"
	"io"

	"golang.org/x/sys/unix"

	"github.com/unipoll/unipoll/poll"
)

// errSpliceRefused: the kernel does not splice these descriptors (EINVAL,
// ENOSYS); the direction copies instead.
var errSpliceRefused = errors.New("unipoll: netloop: splice refused")

// relayForceCopy makes every new direction copy; tests set it to test the
// copy on Linux.
var relayForceCopy = false

// newTransport splices through a pipe when both Streams have descriptors
// and a pipe can be had, and copies otherwise.
func newTransport(src, sink Stream) transport {
	if relayForceCopy || streamFd(src) < 0 || streamFd(sink) < 0 {
		return newRing()
	}
	p, err := newPipe()
	if err != nil {
		return newRing() // out of descriptors: the copy still works
	}
	return p
}

// streamFd is s's descriptor, or -1.
func streamFd(s Stream) int {
	if f, ok := s.(interface{ Fd() int }); ok {
		return f.Fd()
	}
	return -1
}

// pipeTransport splices from the source's socket into a pipe and from the
// pipe into the sink's socket: the bytes stay in the kernel, as page
// references moved from one socket's buffer to the other's.
//
// Its size is the system's default (64 KiB, 16 slots): a larger pipe
// (F_SETPIPE_SZ) saves a few calls per MiB but counts against the user's
// pipe allowance (/proc/sys/fs/pipe-user-pages-soft), past which Linux
// gives new pipes a single page, a loss for every relay opened after that.
type pipeTransport struct {
	r, w int
	size int
}

func newPipe() (*pipeTransport, error) {
	var p [2]int
	if err := unix.Pipe2(p[:], unix.O_NONBLOCK|unix.O_CLOEXEC); err != nil {
		return nil, err
	}
	size, err := unix.FcntlInt(uintptr(p[0]), unix.F_GETPIPE_SZ, 0)
	if err != nil || size <= 0 {
		size = relayRingSize
	}
	return &pipeTransport{r: p[0], w: p[1], size: size}, nil
}

// spliceFlags: never block (the sockets are non-blocking already; this
// makes the pipe so too), and move pages rather than copy where the kernel
// can.
const spliceFlags = unix.SPLICE_F_NONBLOCK | unix.SPLICE_F_MOVE

func (t *pipeTransport) fill(c *Conn, _ int64, room int) (int, error) {
	fd := streamFd(c.s)
	n, err := splice(fd, t.w, room)
	switch {
	case n == 0 && err == nil:
		return 0, io.EOF // splice from a socket returns 0 at the end of input
	case err == unix.EAGAIN:
		drained(c, fd, poll.Readable)
	case err != nil && isRefused(err):
		return n, errSpliceRefused
	}
	return n, err
}

func (t *pipeTransport) drain(c *Conn, _ int64, n int) (int, error) {
	fd := streamFd(c.s)
	k, err := splice(t.r, fd, n)
	if err == unix.EAGAIN {
		drained(c, fd, poll.Writable)
	}
	return k, err
}

// drained ends the Edge pass on c's socket after a splice said EAGAIN, as
// the socket package does after its own reads and writes: the poll(2)
// backend, which emulates edges, watches the socket again only then. The
// errors that leave no pass to end (a closed Poll, a socket removed) are
// none of the relay's business; so is any other, which at worst costs an
// edge the next call would have caught.
func drained(c *Conn, fd int, r poll.Ready) { _ = poll.Fd(fd).Drained(c.l.Poll(), r) }

// splice moves up to n bytes from in to out, again after EINTR.
func splice(in, out, n int) (int, error) {
	for {
		k, err := unix.Splice(in, nil, out, nil, n, spliceFlags)
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			return 0, err
		}
		return int(k), nil
	}
}

func (t *pipeTransport) bound() int       { return t.size }
func (t *pipeTransport) fullBlocks() bool { return true }

func (t *pipeTransport) close() {
	_ = unix.Close(t.r)
	_ = unix.Close(t.w)
}

// isRefused reports a splice error that means "not for these
// descriptors".
func isRefused(err error) bool { return err == unix.EINVAL || err == unix.ENOSYS }
