//go:build darwin || freebsd || netbsd || openbsd || dragonfly

package sys

import "golang.org/x/sys/unix"

// maxChanges bounds the changes one Add, Modify or Delete submits:
// delete and re-add of each of the two filters.
const maxChanges = 4

func kqFlags(mode Mode) int {
	f := unix.EV_ADD
	if mode&Edge != 0 {
		f |= unix.EV_CLEAR
	}
	if mode&Oneshot != 0 {
		f |= unix.EV_ONESHOT
	}
	return f
}

// changesFor writes into changes the kernel changes that turn registration
// prev (nil: none) into next (nil: none) on fd, and returns how many.
// A filter is deleted when it is no longer wanted or its mode changes (an
// EV_ADD on an existing filter updates udata but, on some systems, not
// EV_CLEAR or EV_ONESHOT); a wanted filter is (re-)added, which re-arms it
// and reports it at once if the descriptor is ready.
func changesFor(changes []unix.Kevent_t, fd int, prev, next *kqReg) int {
	n := 0
	for _, f := range [...]struct {
		bit    uint32
		filter int
	}{{Readable, unix.EVFILT_READ}, {Writable, unix.EVFILT_WRITE}} {
		had := prev != nil && prev.interest&f.bit != 0
		want := next != nil && next.interest&f.bit != 0
		if had && (!want || prev.mode != next.mode) {
			setKevent(&changes[n], fd, f.filter, unix.EV_DELETE, 0)
			n++
		}
		if want {
			setKevent(&changes[n], fd, f.filter, kqFlags(next.mode), next.udataOf())
			n++
		}
	}
	return n
}

// apply submits changes to the kernel and returns the first error that
// matters. Ignored: ENOENT when deleting a filter (the kernel drops a
// oneshot filter once it fires), and EPIPE when adding EVFILT_WRITE (older
// darwin reports it for a pipe whose reader is gone).
//
// With EV_RECEIPT every change yields one receipt, in order, in a receipts
// buffer exactly as long as the changes: the kernel writes no events there
// and does not wait, so one call applies them all. Without it (netbsd),
// each change goes alone, so that one ignorable failure does not stop the
// changes after it.
func (s *kqSelector) apply(changes []unix.Kevent_t) error {
	if len(changes) == 0 {
		return nil
	}
	if evReceipt == 0 {
		for i := range changes {
			err := ignoringEINTR(func() error {
				_, err := unix.Kevent(s.kq, changes[i:i+1], nil, nil)
				return err
			})
			if err != nil && !ignorableChangeError(&changes[i], err) {
				return err
			}
		}
		return nil
	}
	var raw [maxChanges * keventWords]uint64
	var receipts []unix.Kevent_t
	if len(changes) <= maxChanges {
		receipts = keventsIn(raw[:], len(changes))
	} else {
		receipts = s.receipts[:len(changes)] // Select's clean-up
	}
	return applyWithReceipts(s.kq, changes, receipts)
}

func applyWithReceipts(kq int, changes, receipts []unix.Kevent_t) error {
	for i := range changes {
		changes[i].Flags |= evReceipt
	}
	var zero unix.Timespec
	var n int
	err := ignoringEINTR(func() error {
		var err error
		n, err = unix.Kevent(kq, changes, receipts, &zero)
		return err
	})
	if err != nil {
		return err
	}
	for i := 0; i < n && i < len(changes); i++ {
		r := &receipts[i]
		if int(r.Flags)&unix.EV_ERROR == 0 || r.Data == 0 {
			continue
		}
		if err := unix.Errno(r.Data); !ignorableChangeError(&changes[i], err) {
			return err
		}
	}
	return nil
}

func ignorableChangeError(change *unix.Kevent_t, err error) bool {
	switch {
	case err == unix.ENOENT:
		return int(change.Flags)&unix.EV_DELETE != 0
	case err == unix.EPIPE:
		return int(change.Filter) == unix.EVFILT_WRITE && int(change.Flags)&unix.EV_ADD != 0
	}
	return false
}
