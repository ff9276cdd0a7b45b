//go:build linux

package child

import (
	"fmt"
	"os"
	"os/exec"
	ossignal "os/signal"
	"strings"
	"syscall"
	"testing"
	"unsafe"

	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"
)

// runHelper runs the helper named by helperEnv in a re-executed test
// binary and prints what Watch returned.
func runHelper(name string) error {
	switch name {
	case "ignore": // the Go way
		ossignal.Ignore(syscall.SIGCHLD)
	case "sig-ign", "nocldwait": // what C code may do, behind the runtime's back
		act := [4]uintptr{0, 0, 0, 0} // handler, flags, restorer, mask
		if name == "sig-ign" {
			act[0] = 1 // SIG_IGN
		} else {
			act[0] = 0             // SIG_DFL
			act[1] = 2 | 0x4000000 // SA_NOCLDWAIT | SA_RESTORER
		}
		if _, _, errno := unix.RawSyscall6(unix.SYS_RT_SIGACTION, uintptr(syscall.SIGCHLD), uintptr(unsafe.Pointer(&act[0])), 0, 8, 0, 0); errno != 0 {
			return errno
		}
	default:
		return fmt.Errorf("unknown helper %q", name)
	}
	for _, pa := range paths {
		cmd := exec.Command("/bin/true")
		if err := cmd.Start(); err != nil {
			return err
		}
		w, err := WatchCmd(cmd, pa.opts...)
		fmt.Printf("%s: %v\n", pa.name, err)
		if w != nil {
			_ = w.Close()
		}
	}
	return nil
}

// A program that ignores SIGCHLD (signal.Ignore, or SIG_IGN or
// SA_NOCLDWAIT set by C code) has its children reaped by the kernel: Watch
// says so with ErrSIGCHLDIgnored instead of waiting for a status that
// cannot come.
func TestSIGCHLDIgnored(t *testing.T) {
	for _, how := range []string{"ignore", "sig-ign", "nocldwait"} {
		t.Run(how, func(t *testing.T) {
			cmd := exec.Command(os.Args[0], "-test.run=^$")
			cmd.Env = append(os.Environ(), helperEnv+"="+how)
			out, err := cmd.CombinedOutput()
			require.NoError(t, err, "helper: %s", out)
			for _, pa := range paths {
				require.Contains(t, string(out), pa.name+": watch pid ")
			}
			require.Equal(t, len(paths), strings.Count(string(out), ErrSIGCHLDIgnored.Error()), "helper said:\n%s", out)
		})
	}
	require.False(t, sigchldIgnored(), "this process does not ignore SIGCHLD")
}
