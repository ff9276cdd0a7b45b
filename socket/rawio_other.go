//go:build unix && !linux

package socket

import "golang.org/x/sys/unix"

// On the BSDs and darwin, system calls go through libc (darwin) or are not
// worth a raw path untested here: reads and writes are ordinary calls.

func sysRead(fd int, b []byte) (int, error)  { return noNegative(unix.Read(fd, b)) }
func sysWrite(fd int, b []byte) (int, error) { return noNegative(unix.Write(fd, b)) }
