//go:build amd64 || arm64

package prefetch

import "unsafe"

// lines prefetches n > 0 lines from p on, into every cache level.
//
//go:noescape
func lines(p unsafe.Pointer, n int)
