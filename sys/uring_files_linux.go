//go:build linux

package sys

import (
	"os"
	"unsafe"

	"golang.org/x/sys/unix"
)

// uringFiles is a ring's table of registered files (IORING_REGISTER_FILES2,
// sparse, Linux 5.19): the streams' requests name their socket by its slot
// there (IOSQE_FIXED_FILE), not by its descriptor. A slot holds a
// reference to the socket's file, not a descriptor, so a stream costs the
// process no descriptor of its own (a server at its descriptor limit
// serves as many connections as on epoll), and a caller who closes its
// descriptor after Delete never leaves a request naming a number the
// process may since have reused: the file stays open until the slot is
// cleared, when the stream's last request is over.
//
// Invariants (uringSelector.mu guards free and next): a slot is in free,
// or at or past next, exactly when it is empty in the kernel's table; a
// stream owns its slot from AddStream until finishIfDoneLocked clears it.
type uringFiles struct {
	size uint32
	next uint32
	free []uint32
}

// io_uring constants for the table (include/uapi/linux/io_uring.h).
const (
	uringRegisterFilesUpdate = 6      // IORING_REGISTER_FILES_UPDATE
	uringRegisterFiles2      = 13     // IORING_REGISTER_FILES2
	uringRsrcRegisterSparse  = 1 << 0 // IORING_RSRC_REGISTER_SPARSE
	uringSqeFixedFile        = 1 << 0 // IOSQE_FIXED_FILE
	uringOpShutdown          = 34     // IORING_OP_SHUTDOWN
)

// uringFilesMax bounds a table: the kernel allocates it whole. A Poll with
// more streams than this does plain readiness for the rest.
const uringFilesMax = 1 << 16

// uringRsrcRegister is struct io_uring_rsrc_register.
type uringRsrcRegister struct {
	nr    uint32
	flags uint32
	_     uint64
	data  uint64
	tags  uint64
}

// uringFilesUpdate is struct io_uring_files_update.
type uringFilesUpdate struct {
	offset uint32
	_      uint32
	fds    uint64
}

var _ [32 - unsafe.Sizeof(uringRsrcRegister{})]struct{}

// newUringFiles registers an empty table of min(RLIMIT_NOFILE,
// uringFilesMax) slots (the kernel refuses more than the limit).
func newUringFiles(ringFd int) (*uringFiles, error) {
	size := uint32(uringFilesMax)
	var lim unix.Rlimit
	if unix.Getrlimit(unix.RLIMIT_NOFILE, &lim) == nil && lim.Cur < uint64(size) {
		size = uint32(lim.Cur)
	}
	reg := uringRsrcRegister{nr: size, flags: uringRsrcRegisterSparse}
	_, _, errno := unix.Syscall6(unix.SYS_IO_URING_REGISTER, uintptr(ringFd), uringRegisterFiles2,
		uintptr(unsafe.Pointer(&reg)), unsafe.Sizeof(reg), 0, 0)
	if errno != 0 {
		return nil, os.NewSyscallError("io_uring_register(files)", errno)
	}
	return &uringFiles{size: size}, nil
}

// take puts fd's file in a free slot and returns the slot; ok is false
// when the table is full.
func (f *uringFiles) take(ringFd, fd int) (slot uint32, ok bool, err error) {
	switch {
	case len(f.free) > 0:
		slot = f.free[len(f.free)-1]
	case f.next < f.size:
		slot = f.next
	default:
		return 0, false, nil
	}
	if err := f.set(ringFd, slot, int32(fd)); err != nil {
		return 0, false, err
	}
	if len(f.free) > 0 {
		f.free = f.free[:len(f.free)-1]
	} else {
		f.next++
	}
	return slot, true, nil
}

// clear empties slot, dropping its reference to the file.
func (f *uringFiles) clear(ringFd int, slot uint32) {
	if f.set(ringFd, slot, -1) == nil {
		f.free = append(f.free, slot)
	}
}

func (f *uringFiles) set(ringFd int, slot uint32, fd int32) error {
	fds := [1]int32{fd}
	up := uringFilesUpdate{offset: slot, fds: uint64(uintptr(unsafe.Pointer(&fds[0])))}
	for {
		_, _, errno := unix.Syscall6(unix.SYS_IO_URING_REGISTER, uintptr(ringFd), uringRegisterFilesUpdate,
			uintptr(unsafe.Pointer(&up)), 1, 0, 0)
		switch errno {
		case 0:
			return nil
		case unix.EINTR:
			continue
		}
		return os.NewSyscallError("io_uring_register(files update)", errno)
	}
}
