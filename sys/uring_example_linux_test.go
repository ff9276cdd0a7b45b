//go:build linux

package sys_test

import (
	"errors"
	"fmt"

	"github.com/unipoll/unipoll/sys"
)

// Choosing io_uring explicitly, and falling back to the default backend
// where the kernel lacks or refuses it.
func ExampleNew_uring() {
	s, err := sys.New(sys.BackendUring)
	if errors.Is(err, sys.ErrBackendUnavailable) {
		s, err = sys.New("") // epoll
	}
	if err != nil {
		fmt.Println(err)
		return
	}
	defer s.Close()
	fmt.Println(s.Name() == sys.BackendUring || s.Name() == sys.BackendEpoll)
	// Output: true
}
