//go:build !amd64 && !arm64

package prefetch

import "unsafe"

// lines: no prefetch instruction is wired here; the hint is dropped.
func lines(p unsafe.Pointer, n int) {}
