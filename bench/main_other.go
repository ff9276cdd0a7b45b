//go:build !linux

// Command bench measures unipoll against its peers. It runs on Linux only:
// its baselines (eventfd, epoll, a C epoll server) and its measurements
// (/proc, taskset, strace) are Linux's.
package main

import (
	"fmt"
	"os"
)

func main() {
	fmt.Fprintln(os.Stderr, "bench runs on Linux only")
	os.Exit(1)
}
