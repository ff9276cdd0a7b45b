// Command uring_available tells .ci/run whether this kernel lets unipoll
// open an io_uring selector: exit status 0 where it does, 1 where the
// kernel lacks or refuses io_uring (sys.ErrBackendUnavailable) or the
// operating system has none (sys.ErrUnknownBackend), so that the uring
// stage is skipped, saying why; 2 on any other error (CI fails).
//
// Run it from the repository's root: go run .ci/uring_available.go
package main

import (
	"errors"
	"fmt"
	"os"

	"github.com/unipoll/unipoll/sys"
)

func main() {
	s, err := sys.New(sys.BackendUring)
	if err != nil {
		fmt.Println(err)
		if errors.Is(err, sys.ErrBackendUnavailable) || errors.Is(err, sys.ErrUnknownBackend) {
			os.Exit(1)
		}
		os.Exit(2)
	}
	if err := s.Close(); err != nil {
		fmt.Println(err)
		os.Exit(2)
	}
	fmt.Println("io_uring: available")
}
