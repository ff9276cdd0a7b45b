//go:build linux

package main

// Scenarios that wait for a part of the library that has not landed. Each
// becomes one file (sN_name.go, registering itself as the others do) when
// its part lands; remove its line here then. The runner lists them and
// says "not built yet" in the table instead of measuring anything.

func init() {
	pending(7, "resp", "7. RESP: examples/resp vs redis-server under redis-benchmark",
		"waits for examples/resp")
}
