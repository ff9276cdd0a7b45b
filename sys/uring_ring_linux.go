//go:build linux

package sys

import (
	"encoding/binary"
	"fmt"
	"os"
	"sync/atomic"
	"syscall"
	"unsafe"

	"golang.org/x/sys/unix"
)

// The io_uring ring: the memory the kernel and the uring selector share, and
// who may write what in it. The layout is the kernel's
// (include/uapi/linux/io_uring.h; io_uring_setup(2) and io_uring_enter(2)
// describe the protocol); x/sys has the system call numbers but none of the
// structures, so they are spelled out here.
//
// Three mappings of the ring descriptor: the SQ ring and the CQ ring (one
// mapping, IORING_FEAT_SINGLE_MMAP, which every kernel we accept has) and
// the array of submission entries (SQEs). Each ring is a power-of-two
// array indexed by free-running 32-bit head and tail counters (index =
// counter & mask), so tail-head is the number of entries in it, wrap
// included.
//
// Invariants (numbered; the code cites them):
//
//  1. SQ ring: we are the producer. We write an SQE in the slot at our tail,
//     then publish it by storing tail+1 to the shared sq tail. The kernel
//     is the consumer: io_uring_enter(to_submit) reads the shared tail,
//     reads the SQEs up to it, and then stores its head. We only ever write
//     the tail and the SQEs; the kernel only ever writes the head.
//  2. A slot is ours to fill only while tail-head < sq entries, head read
//     from the shared counter: the kernel is done with an SQE once it has
//     moved its head past it (it copies what it needs while submitting).
//     All SQ writes (SQEs and tail) happen under uringSelector.mu, so there
//     is one producer at a time; any goroutine may then call io_uring_enter
//     to submit, and the kernel serialises submitters itself.
//  3. CQ ring: the kernel is the producer (it writes a CQE, then its tail);
//     we are the consumer and own the head: we read CQEs up to the tail we
//     loaded, then store the new head, which gives the slots back. Only the
//     goroutine in Select reads the CQ ring (Select is single-goroutine by
//     the Selector contract).
//  4. Ordering. Each side orders "entry, then counter" on publish and
//     "counter, then entry" on consume. The kernel uses
//     smp_store_release / smp_load_acquire on its side. Ours are
//     sync/atomic loads and stores of the counters, which the Go memory
//     model makes sequentially consistent: at least the acquire (load
//     before the entries are read) and release (store after the entries
//     are written, or after they were read, for the CQ head) the protocol
//     needs. Plain reads and writes of SQEs and CQEs sit between them.
//  5. The sq flags word is the kernel's (IORING_SQ_CQ_OVERFLOW); we only
//     load it, atomically.
//  6. The SQ indirection array is filled once with the identity (slot i
//     holds i) at setup and never written again, so publishing a slot
//     needs only the tail store.
//
// The mappings live until close, which the uring selector calls only after
// Close has ruled out every other user (Select by contract, the others by
// mu and the closed flag).

// io_uring constants used here (include/uapi/linux/io_uring.h).
const (
	uringSetupCQSize = 1 << 3 // IORING_SETUP_CQSIZE
	uringSetupClamp  = 1 << 4 // IORING_SETUP_CLAMP
	uringSetupCoop   = 1 << 8 // IORING_SETUP_COOP_TASKRUN (5.19)

	uringFeatSingleMmap = 1 << 0  // IORING_FEAT_SINGLE_MMAP (5.4)
	uringFeatNoDrop     = 1 << 1  // IORING_FEAT_NODROP (5.5)
	uringFeatExtArg     = 1 << 8  // IORING_FEAT_EXT_ARG (5.11)
	uringFeatRsrcTags   = 1 << 10 // IORING_FEAT_RSRC_TAGS (5.13, as multishot poll)

	uringOffSQRing = 0          // IORING_OFF_SQ_RING
	uringOffSQEs   = 0x10000000 // IORING_OFF_SQES

	uringEnterGetEvents = 1 << 0 // IORING_ENTER_GETEVENTS
	uringEnterExtArg    = 1 << 3 // IORING_ENTER_EXT_ARG

	uringOpPollAdd    = 6 // IORING_OP_POLL_ADD
	uringOpPollRemove = 7 // IORING_OP_POLL_REMOVE

	uringPollAddMulti = 1 << 0 // IORING_POLL_ADD_MULTI, in the SQE's len

	uringCQEFMore = 1 << 1 // IORING_CQE_F_MORE: a multishot request goes on

	uringSQCQOverflow = 1 << 1 // IORING_SQ_CQ_OVERFLOW
)

// uringFeatsNeeded are the features the selector relies on: one mapping for
// both rings, no completion ever dropped, a timeout passed to
// io_uring_enter, and (by proxy: there is no feature bit for it) multishot
// poll, which arrived in the same release as IORING_FEAT_RSRC_TAGS.
const uringFeatsNeeded = uringFeatSingleMmap | uringFeatNoDrop | uringFeatExtArg | uringFeatRsrcTags

// uringSQE is struct io_uring_sqe (64 bytes), with the union members this
// selector uses named after their use.
type uringSQE struct {
	opcode      uint8
	flags       uint8
	ioprio      uint16
	fd          int32
	off         uint64
	addr        uint64 // POLL_REMOVE: the user_data of the request to remove
	len         uint32 // POLL_ADD: IORING_POLL_ADD_MULTI
	opFlags     uint32 // POLL_ADD: poll32_events
	userData    uint64
	bufIndex    uint16
	personality uint16
	optlen      uint32 // splice_fd_in, file_index; RECV: the multishot byte cap (S7)
	addr3       uint64
	_           uint64
}

// uringCQE is struct io_uring_cqe (16 bytes; no IORING_SETUP_CQE32).
type uringCQE struct {
	userData uint64
	res      int32
	flags    uint32
}

type uringSQOffsets struct {
	head, tail, ringMask, ringEntries, flags, dropped, array, resv1 uint32
	userAddr                                                        uint64
}

type uringCQOffsets struct {
	head, tail, ringMask, ringEntries, overflow, cqes, flags, resv1 uint32
	userAddr                                                        uint64
}

// uringParams is struct io_uring_params (120 bytes).
type uringParams struct {
	sqEntries, cqEntries, flags, sqThreadCPU, sqThreadIdle, features, wqFd uint32
	resv                                                                   [3]uint32
	sqOff                                                                  uringSQOffsets
	cqOff                                                                  uringCQOffsets
}

// uringGeteventsArg is struct io_uring_getevents_arg, passed with
// IORING_ENTER_EXT_ARG. ts is the address of a timespec; the caller keeps
// both in memory the garbage collector does not move (the heap).
type uringGeteventsArg struct {
	sigmask     uint64
	sigmaskSize uint32
	minWaitUsec uint32
	ts          uint64
}

// Compile-time checks of the sizes the kernel expects.
var (
	_ [64 - unsafe.Sizeof(uringSQE{})]struct{}
	_ [unsafe.Sizeof(uringSQE{}) - 64]struct{}
	_ [16 - unsafe.Sizeof(uringCQE{})]struct{}
	_ [120 - unsafe.Sizeof(uringParams{})]struct{}
	_ [unsafe.Sizeof(uringParams{}) - 120]struct{}
	_ [24 - unsafe.Sizeof(uringGeteventsArg{})]struct{}
)

// uringRing is one io_uring instance and its mappings.
type uringRing struct {
	fd      int
	ringMem []byte
	sqeMem  []byte
	sqHead  *uint32 // kernel writes (1)
	sqTail  *uint32 // we write, under mu (1, 2)
	sqFlags *uint32 // kernel writes (5)
	sqMask  uint32
	sqSize  uint32
	sqes    []uringSQE
	cqHead  *uint32 // we write, Select only (3)
	cqTail  *uint32 // kernel writes (3)
	cqMask  uint32
	cqes    []uringCQE
	tail    uint32 // our copy of *sqTail; guarded by uringSelector.mu
}

// setupUring opens a ring with sq submission slots and cq completion slots
// (both powers of two; the kernel clamps them to its limits).
func setupUring(sq, cq uint32) (*uringRing, error) {
	// COOP_TASKRUN: a completion's work for a thread that is running is
	// left for its next entry into the kernel (which the polling thread
	// makes for every read and write) instead of interrupting it with an
	// inter-processor interrupt; a sleeping thread is still woken for it.
	// Kernels before 5.19 refuse the flag (EINVAL) and get the ring
	// without it.
	p := uringParams{flags: uringSetupCQSize | uringSetupClamp | uringSetupCoop, cqEntries: cq}
	r1, _, errno := unix.Syscall(unix.SYS_IO_URING_SETUP, uintptr(sq), uintptr(unsafe.Pointer(&p)), 0)
	if errno == unix.EINVAL {
		p = uringParams{flags: uringSetupCQSize | uringSetupClamp, cqEntries: cq}
		r1, _, errno = unix.Syscall(unix.SYS_IO_URING_SETUP, uintptr(sq), uintptr(unsafe.Pointer(&p)), 0)
	}
	if errno != 0 {
		return nil, errno
	}
	r := &uringRing{fd: int(r1)} // the kernel opens it O_CLOEXEC
	if p.features&uringFeatsNeeded != uringFeatsNeeded {
		unix.Close(r.fd)
		return nil, fmt.Errorf("kernel io_uring lacks features %#x (needs Linux 5.13)", uringFeatsNeeded&^p.features)
	}
	if err := r.mapRings(&p); err != nil {
		r.close()
		return nil, err
	}
	return r, nil
}

func (r *uringRing) mapRings(p *uringParams) error {
	size := max(p.sqOff.array+p.sqEntries*4, p.cqOff.cqes+p.cqEntries*uint32(unsafe.Sizeof(uringCQE{})))
	mem, err := unix.Mmap(r.fd, uringOffSQRing, int(size), unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED|unix.MAP_POPULATE)
	if err != nil {
		return os.NewSyscallError("mmap(io_uring rings)", err)
	}
	r.ringMem = mem
	sqes, err := unix.Mmap(r.fd, uringOffSQEs, int(p.sqEntries)*int(unsafe.Sizeof(uringSQE{})), unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED|unix.MAP_POPULATE)
	if err != nil {
		return os.NewSyscallError("mmap(io_uring sqes)", err)
	}
	r.sqeMem = sqes
	at := func(off uint32) *uint32 { return (*uint32)(unsafe.Pointer(&mem[off])) }
	r.sqHead, r.sqTail, r.sqFlags = at(p.sqOff.head), at(p.sqOff.tail), at(p.sqOff.flags)
	r.sqMask, r.sqSize = *at(p.sqOff.ringMask), *at(p.sqOff.ringEntries)
	r.cqHead, r.cqTail = at(p.cqOff.head), at(p.cqOff.tail)
	r.cqMask = *at(p.cqOff.ringMask)
	r.sqes = unsafe.Slice((*uringSQE)(unsafe.Pointer(&sqes[0])), p.sqEntries)
	r.cqes = unsafe.Slice((*uringCQE)(unsafe.Pointer(&mem[p.cqOff.cqes])), p.cqEntries)
	array := unsafe.Slice(at(p.sqOff.array), p.sqEntries)
	for i := range array {
		array[i] = uint32(i) // invariant 6
	}
	r.tail = atomic.LoadUint32(r.sqTail)
	return nil
}

// sqPending is how many published SQEs the kernel has not consumed yet.
// Safe from any goroutine (both counters are loaded atomically).
func (r *uringRing) sqPending() uint32 {
	return atomic.LoadUint32(r.sqTail) - atomic.LoadUint32(r.sqHead)
}

// cqOverflow reports whether completions wait in the kernel's overflow
// list (the CQ ring was full); io_uring_enter with GETEVENTS moves them in.
func (r *uringRing) cqOverflow() bool {
	return atomic.LoadUint32(r.sqFlags)&uringSQCQOverflow != 0
}

// push writes e into the next free slot and publishes it (invariants 1, 2,
// 4). The caller holds mu and has made sure the ring is not full.
func (r *uringRing) push(e uringSQE) {
	r.sqes[r.tail&r.sqMask] = e
	r.tail++
	atomic.StoreUint32(r.sqTail, r.tail)
}

// enter calls io_uring_enter. A call that may sleep (minComplete > 0) is an
// ordinary system call, so that the runtime can hand the thread's P to
// another while it sleeps; one that cannot sleep is a raw one, as epoll's
// look is (epoll_wait_linux.go).
func (r *uringRing) enter(toSubmit, minComplete, flags uint32, arg unsafe.Pointer, argSize uintptr) (int, syscall.Errno) {
	call := unix.RawSyscall6
	if minComplete > 0 {
		call = unix.Syscall6
	}
	n, _, errno := call(unix.SYS_IO_URING_ENTER, uintptr(r.fd), uintptr(toSubmit), uintptr(minComplete),
		uintptr(flags), uintptr(arg), argSize)
	return int(n), errno
}

// close unmaps the rings and closes the ring descriptor. Closing it makes
// the kernel cancel every request in flight and drop its references to the
// files they watch (asynchronously, soon after).
func (r *uringRing) close() error {
	if r.sqeMem != nil {
		_ = unix.Munmap(r.sqeMem)
		r.sqeMem, r.sqes = nil, nil
	}
	if r.ringMem != nil {
		_ = unix.Munmap(r.ringMem)
		r.ringMem, r.cqes = nil, nil
	}
	if err := unix.Close(r.fd); err != nil {
		return os.NewSyscallError("close(io_uring)", err)
	}
	return nil
}

// uringPollEvents is the poll32_events field of a POLL_ADD for interest.
// The kernel adds POLLERR, POLLHUP and POLLRDHUP to whatever is asked, so a
// hang-up or error is reported whatever the interest, as the Selector
// contract wants. The kernel reads the field as two 16-bit halves swapped
// on a big-endian machine (liburing does the same swap).
func uringPollEvents(interest uint32) uint32 {
	var ev uint32
	if interest&Readable != 0 {
		ev |= unix.POLLIN
	}
	if interest&(Readable|Hup) != 0 {
		ev |= unix.POLLRDHUP // a peer's half-close is a hang-up to report
	}
	if interest&Writable != 0 {
		ev |= unix.POLLOUT
	}
	if interest&Priority != 0 {
		ev |= unix.POLLPRI
	}
	if bigEndian {
		ev = ev<<16 | ev>>16
	}
	return ev
}

// uringReady turns a POLL_ADD result (a poll mask) into readiness bits for
// a registration with interest. The kernel reports POLLRDHUP whatever was
// asked (uringPollEvents); epoll reports a peer's half-close only to an
// interest with Readable or Hup, and so does this.
func uringReady(mask, interest uint32) uint32 {
	if interest&(Readable|Hup) == 0 {
		mask &^= unix.POLLRDHUP
	}
	// A poll request's mask is poll(2)'s, whose bits Linux numbers as
	// epoll's (checked below).
	return epollReady(mask)
}

// This fails to compile unless every poll(2) bit uringReady reads
// has its epoll twin's value.
var _ = [1]struct{}{}[unix.POLLIN^unix.EPOLLIN|unix.POLLOUT^unix.EPOLLOUT|
	unix.POLLERR^unix.EPOLLERR|unix.POLLHUP^unix.EPOLLHUP|
	unix.POLLRDHUP^unix.EPOLLRDHUP|unix.POLLPRI^unix.EPOLLPRI]

var bigEndian = binary.NativeEndian.Uint16([]byte{0, 1}) == 1
