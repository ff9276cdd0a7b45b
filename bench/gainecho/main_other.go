//go:build !linux

// Command gainecho serves echo on gain, an io_uring framework: Linux only.
package main

import (
	"fmt"
	"os"
)

func main() {
	fmt.Fprintln(os.Stderr, "gainecho runs on Linux only")
	os.Exit(1)
}
