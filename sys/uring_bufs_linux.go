//go:build linux

package sys

import (
	"os"
	"sync"
	"sync/atomic"
	"unsafe"

	"golang.org/x/sys/unix"
)

// uringBufs is the provided buffer ring of a uring selector's streams
// (IORING_REGISTER_PBUF_RING, Linux 5.19): a ring of buffer descriptions
// the kernel takes buffers from when a multishot receive completes, and
// the memory of the buffers themselves. Both are anonymous mappings, out
// of the Go heap: the kernel writes into the buffers whenever a receive
// completes, with no regard for the garbage collector.
//
// Invariants (mu guards tail and every write of a description):
//
//	B1. The kernel is the consumer: it takes the description at its own
//	    head (which it keeps to itself) and moves on; we are the producer
//	    and own the tail, the 16 bits at offset 14 of the first
//	    description. We write a description in the slot at tail, then
//	    publish it by storing tail+1 (release); the kernel loads the tail
//	    with acquire before it reads a description.
//	B2. A buffer is the kernel's from the moment its description is
//	    published until a completion names it (IORING_CQE_F_BUFFER, the
//	    buffer id in the flags' top 16 bits); from then on it is the
//	    stream's that received it, until the stream gives it back (put).
//	    Every buffer is in exactly one of those hands, so the ring never
//	    holds more than count descriptions and never overflows.
//	B3. The tail shares a 32-bit word with the buffer id of the first
//	    description (offsets 12 to 15). Go has no 16-bit atomic store, so
//	    the tail is published with a 32-bit one that writes that id again:
//	    first0 is the id we last wrote there, so the store changes only the
//	    tail. A kernel reading the first description meanwhile reads the
//	    id it would have read anyway.
type uringBufs struct {
	mu     sync.Mutex
	count  int    // buffers: a power of two
	ring   []byte // the descriptions (count of 16 bytes)
	mem    []byte // the buffers, uringBufSize each, buffer id = index
	tail   uint16
	first0 uint16
	// lent counts buffers held by streams (B2), for the tests.
	lent atomic.Int32
}

// Buffer ring sizes: uringBufCount buffers of uringBufSize bytes (16 MiB
// of address space, mapped when a Poll adds its first stream; the pages
// are touched as the kernel takes the buffers, in ring order). Enough for
// one message in flight on each of thousands of connections between two
// harvests: with 256 a 10,000-connection echo spent its time running the
// ring dry (ENOBUFS) and arming receives again, at 4.5 times the CPU per
// message. A stream holds at most uringStreamHold bytes before its
// receive is paused, so that one slow reader cannot take every buffer.
const (
	uringBufCount   = 8192
	uringBufSize    = 2048
	uringBufGroup   = 0
	uringStreamHold = 64 << 10
)

// io_uring constants for streams (include/uapi/linux/io_uring.h).
const (
	uringRegisterPbufRing   = 22     // IORING_REGISTER_PBUF_RING
	uringUnregisterPbufRing = 23     // IORING_UNREGISTER_PBUF_RING
	uringOpAsyncCancel      = 14     // IORING_OP_ASYNC_CANCEL
	uringOpSend             = 26     // IORING_OP_SEND
	uringOpRecv             = 27     // IORING_OP_RECV
	uringSqeBufferSelect    = 1 << 5 // IOSQE_BUFFER_SELECT
	uringRecvMultishot      = 1 << 1 // IORING_RECV_MULTISHOT, in ioprio
	uringCQEFBuffer         = 1 << 0 // IORING_CQE_F_BUFFER
	uringCQEBufferShift     = 16     // IORING_CQE_BUFFER_SHIFT
)

// uringBufReg is struct io_uring_buf_reg.
type uringBufReg struct {
	ringAddr    uint64
	ringEntries uint32
	bgid        uint16
	flags       uint16
	_           [3]uint64
}

var _ [40 - unsafe.Sizeof(uringBufReg{})]struct{}

// newUringBufs maps the ring and count buffers (a power of two, at most
// 32768), registers them with the ring descriptor ringFd, and publishes
// every buffer.
func newUringBufs(ringFd, count int) (*uringBufs, error) {
	pg := os.Getpagesize()
	ringLen := (count*16 + pg - 1) / pg * pg
	ring, err := unix.Mmap(-1, 0, ringLen, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_PRIVATE|unix.MAP_ANONYMOUS)
	if err != nil {
		return nil, os.NewSyscallError("mmap(buffer ring)", err)
	}
	mem, err := unix.Mmap(-1, 0, count*uringBufSize, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_PRIVATE|unix.MAP_ANONYMOUS)
	if err != nil {
		_ = unix.Munmap(ring)
		return nil, os.NewSyscallError("mmap(buffers)", err)
	}
	b := &uringBufs{count: count, ring: ring, mem: mem}
	reg := uringBufReg{ringAddr: uint64(uintptr(unsafe.Pointer(&ring[0]))), ringEntries: uint32(count), bgid: uringBufGroup}
	_, _, errno := unix.Syscall6(unix.SYS_IO_URING_REGISTER, uintptr(ringFd), uringRegisterPbufRing,
		uintptr(unsafe.Pointer(&reg)), 1, 0, 0)
	if errno != 0 {
		b.unmap()
		return nil, os.NewSyscallError("io_uring_register(pbuf ring)", errno)
	}
	b.mu.Lock()
	for id := range count {
		b.writeLocked(uint16(id))
	}
	b.publishLocked()
	b.mu.Unlock()
	return b, nil
}

// buf is the memory of buffer id.
func (b *uringBufs) buf(id uint16) []byte {
	off := int(id) * uringBufSize
	return b.mem[off : off+uringBufSize : off+uringBufSize]
}

// put gives buffers back to the kernel (B2).
func (b *uringBufs) put(ids ...uint16) {
	b.mu.Lock()
	for _, id := range ids {
		b.writeLocked(id)
	}
	b.publishLocked()
	b.mu.Unlock()
	b.lent.Add(-int32(len(ids)))
}

// writeLocked writes id's description in the slot at the tail, not yet
// published (B1).
func (b *uringBufs) writeLocked(id uint16) {
	slot := int(b.tail) & (b.count - 1)
	d := b.ring[slot*16 : slot*16+16 : slot*16+16]
	*(*uint64)(unsafe.Pointer(&d[0])) = uint64(uintptr(unsafe.Pointer(&b.mem[int(id)*uringBufSize])))
	*(*uint32)(unsafe.Pointer(&d[8])) = uringBufSize
	if slot == 0 {
		b.first0 = id // B3: the store in publishLocked writes it
	} else {
		*(*uint16)(unsafe.Pointer(&d[12])) = id
	}
	b.tail++
}

// publishLocked stores the tail (B1, B3).
func (b *uringBufs) publishLocked() {
	word := uint32(b.tail)<<16 | uint32(b.first0)
	if bigEndian {
		word = uint32(b.first0)<<16 | uint32(b.tail)
	}
	atomic.StoreUint32((*uint32)(unsafe.Pointer(&b.ring[12])), word)
}

// close unregisters the ring (the caller is closing the ring descriptor,
// or it failed to set up) and unmaps both mappings. No receive may be in
// the kernel any more, and no stream may hold a buffer (B2).
func (b *uringBufs) close(ringFd int) {
	reg := uringBufReg{bgid: uringBufGroup}
	_, _, _ = unix.Syscall6(unix.SYS_IO_URING_REGISTER, uintptr(ringFd), uringUnregisterPbufRing,
		uintptr(unsafe.Pointer(&reg)), 1, 0, 0)
	b.unmap()
}

func (b *uringBufs) unmap() {
	_ = unix.Munmap(b.ring)
	_ = unix.Munmap(b.mem)
	b.ring, b.mem = nil, nil
}
