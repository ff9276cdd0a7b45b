package testsupport

import (
	"fmt"
	"math"
	"os"
	"runtime"
)

// LoadPerCPU is the one-minute load average per CPU, rounded up, at least
// 1 (1 when it cannot be read): the scale of the scheduling noise that a
// timing bound allows for on a shared machine, where a goroutine waiting
// for a core is not the lateness under test.
func LoadPerCPU() int {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return 1
	}
	var load float64
	if _, err := fmt.Sscan(string(b), &load); err != nil {
		return 1
	}
	return max(1, int(math.Ceil(load/float64(runtime.NumCPU()))))
}
