//go:build linux

package proptest

import (
	"math/rand/v2"
	"testing"

	"pgregory.net/rapid"
)

// Fuzz targets: the same properties as TestStateMachine, with the bytes
// decoded by rapid (rapid.MakeFuzz) into the same draws (backend, wheel,
// then the sequence of operations and their arguments). `go test` runs the
// seed corpus below (and any files under testdata/fuzz/<Target>/); `go
// test -fuzz=FuzzStateMachine ./proptest` explores from there. Inputs that
// run out of bytes before the sequence ends are skipped.

// fuzzSeeds are deterministic pseudo-random inputs, long enough (16 KiB,
// 2048 rapid words) for a full sequence.
func fuzzSeeds(n int, seed uint64) [][]byte {
	r := rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))
	out := make([][]byte, n)
	for i := range out {
		b := make([]byte, 16<<10)
		for j := range b {
			b[j] = byte(r.Uint32())
		}
		out[i] = b
	}
	return out
}

// FuzzStateMachine is TestStateMachine on every backend under test, with
// every kind of source.
func FuzzStateMachine(f *testing.F) {
	for _, s := range fuzzSeeds(8, 1) {
		f.Add(s)
	}
	f.Fuzz(rapid.MakeFuzz(func(t *rapid.T) {
		be := drawBackend(t)
		stateMachine(backendOf(be))(t)
	}))
}

// FuzzRegistrations is the state machine with Registrations only (no
// descriptors): user-space readiness, delays, Close.
func FuzzRegistrations(f *testing.F) {
	for _, s := range fuzzSeeds(8, 2) {
		f.Add(s)
	}
	f.Fuzz(rapid.MakeFuzz(func(t *rapid.T) {
		be := drawBackend(t)
		stateMachineOf(backendOf(be), []kind{regKind{}})(t)
	}))
}

// drawBackend draws one of the backends under test.
func drawBackend(t *rapid.T) string {
	bes := backendsUnderTest()
	return bes[rapid.IntRange(0, len(bes)-1).Draw(t, "backend")]
}
