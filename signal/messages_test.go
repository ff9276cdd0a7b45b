//go:build unix

package signal

import (
	"strings"
	"syscall"
	"testing"

	"github.com/stretchr/testify/require"
)

// New with a signal no process can catch names it, and says why, rather
// than ending with its description ("killed"); it still matches
// ErrUncatchable, and the library is named once.
func TestUncatchableMessage(t *testing.T) {
	for sig, name := range map[syscall.Signal]string{syscall.SIGKILL: "SIGKILL", syscall.SIGSTOP: "SIGSTOP"} {
		w, err := New(syscall.SIGUSR1, sig)
		require.Nil(t, w)
		require.ErrorIs(t, err, ErrUncatchable)
		require.EqualError(t, err, "unipoll: signal: "+name+" cannot be caught: no process may catch, block or ignore it")
		require.Equal(t, 1, strings.Count(err.Error(), "unipoll: "))
	}
}
