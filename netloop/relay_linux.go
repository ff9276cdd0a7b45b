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
	in, out := streamFd(src), streamFd(sink)
	if relayForceCopy || in < 0 || out < 0 {
		return newRing()
	}
	p, err := newPipe(in, out)
	if err != nil {
		return newRing() // out of descriptors: the copy still works
	}
	return p
}

// spliceable reports that newTransport would splice between src and sink.
func spliceable(src, sink Stream) bool {
	return !relayForceCopy && streamFd(src) >= 0 && streamFd(sink) >= 0
}

// streamFd is s's descriptor, or -1, also when its I/O goes through its
// Poll's backend (socket.TCPConn.Completion), which a splice of the
// descriptor would bypass.
func streamFd(s Stream) int {
	if c, ok := s.(interface{ Completion() bool }); ok && c.Completion() {
		return -1
	}
	if f, ok := s.(interface{ Fd() int }); ok {
		return f.Fd()
	}
	return -1
}

// pipeTransport splices from the source's socket into a pipe and from the
// pipe into the sink's socket: the bytes stay in the kernel, as page
// references moved from one socket's buffer to the other's.
//
// A pipe starts at the system's default size (64 KiB, 16 slots) and grows
// to relayPipeMax the first time it fills up: a bulk transfer then takes
// about half the relay's CPU per MiB (BenchmarkRelay: 18 -> 10 us per
// 64 KiB), while a pipe that carries only small messages keeps the
// default, since every pipe's size counts against the user's allowance
// (/proc/sys/fs/pipe-user-pages-soft, 64 MiB by default), past which Linux
// gives new pipes two pages and refuses to grow them.
//
// The pipe keeps the two sockets' descriptors, read once when it is made:
// a Conn's Stream is closed only by the Conn's removal (Conn.Stream says
// so to the user), after its last call, so the numbers stay its sockets'
// for as long as the relay's calls use them, and a splice does not look
// them up through the socket's guard (a cache miss on the socket, among
// thousands, for every splice).
type pipeTransport struct {
	r, w    int  // the pipe's ends
	in, out int  // the source's and the sink's sockets
	size    int  // the source's: the pipe's size now
	grown   bool // the source's: grow was tried
}

// relayPipeMax is what a pipe that fills up grows to.
const relayPipeMax = 256 << 10

func newPipe(in, out int) (*pipeTransport, error) {
	var p [2]int
	if err := unix.Pipe2(p[:], unix.O_NONBLOCK|unix.O_CLOEXEC); err != nil {
		return nil, err
	}
	size, err := unix.FcntlInt(uintptr(p[0]), unix.F_GETPIPE_SZ, 0)
	if err != nil || size <= 0 {
		size = relayRingSize
	}
	return &pipeTransport{r: p[0], w: p[1], in: in, out: out, size: size}, nil
}

// spliceFlags: never block (the sockets are non-blocking already; this
// makes the pipe so too), and move pages rather than copy where the kernel
// can.
const spliceFlags = unix.SPLICE_F_NONBLOCK | unix.SPLICE_F_MOVE

func (t *pipeTransport) fill(c *Conn, _ int64, room int) (int, error) {
	fd := t.in
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
	fd := t.out
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
//
// It is a raw system call, as the socket package's reads and writes are
// (socket/rawio_linux.go says why at length): the runtime is not told, so
// the Loop's goroutine keeps its P through the call, and sysmon neither
// takes the P from a splice that outlasts its 20µs check nor wakes
// another thread to run it; pinned to one core, each of those was a
// context switch on the relay's core. It cannot wait: both sockets and
// the pipe are non-blocking, and SPLICE_F_NONBLOCK says so again for the
// pipe. A call moves page references, at most a pipe's bound
// (relayPipeMax), which is the time the goroutine cannot be preempted.
func splice(in, out, n int) (int, error) {
	for {
		k, _, errno := unix.RawSyscall6(unix.SYS_SPLICE, uintptr(in), 0, uintptr(out), 0, uintptr(n), spliceFlags)
		switch errno {
		case 0:
			return int(k), nil
		case unix.EINTR:
			continue
		case unix.EAGAIN:
			return 0, unix.EAGAIN // the value, without the interface's allocation
		}
		return 0, errno
	}
}

// grow enlarges a full pipe once; it reports whether it has more room
// now. The kernel refuses past the user's allowance (EPERM), and the pipe
// keeps its size.
func (t *pipeTransport) grow() bool {
	if t.grown {
		return false
	}
	t.grown = true
	size, err := unix.FcntlInt(uintptr(t.w), unix.F_SETPIPE_SZ, relayPipeMax)
	if err != nil || size <= t.size {
		return false
	}
	t.size = size
	return true
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
