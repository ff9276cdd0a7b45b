//go:build unix && race

package main

// raceEnabled: the tests run under -race, and build the proxy with it too.
const raceEnabled = true
