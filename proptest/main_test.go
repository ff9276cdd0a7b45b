//go:build linux

package proptest

import (
	"flag"
	"fmt"
	"os"
	"strconv"
	"testing"
	"time"

	"go.uber.org/goleak"
	"pgregory.net/rapid"

	"github.com/unipoll/unipoll/internal/testsupport"
)

// soak is the factor PROPTEST_SOAK applies to the amount of checking:
// 1 normally, soakFactor with PROPTEST_SOAK=1 (or the number given, if it
// is larger).
var soak = 1

const soakFactor = 100

func TestMain(m *testing.M) {
	flag.Parse()
	if v := os.Getenv("PROPTEST_SOAK"); v != "" && v != "0" {
		soak = soakFactor
		if n, err := strconv.Atoi(v); err == nil && n > soak {
			soak = n
		}
		// rapid reads its check count from the -rapid.checks flag; scale
		// whatever it is (its default, RAPID_CHECKS, or the command line).
		f := flag.Lookup("rapid.checks")
		n, err := strconv.Atoi(f.Value.String())
		if err != nil {
			fmt.Fprintln(os.Stderr, "proptest: -rapid.checks:", err)
			os.Exit(2)
		}
		_ = flag.Set("rapid.checks", strconv.Itoa(n*soak))
	}
	// More steps per check than rapid's default 30, unless asked otherwise:
	// most interesting interleavings need a few sources set up first.
	if !flagSet("rapid.steps") && os.Getenv("RAPID_STEPS") == "" {
		_ = flag.Set("rapid.steps", "60")
	}
	start := time.Now()
	time.Sleep(time.Millisecond) // the runtime opens its own poller on first use of a timer
	fdsBefore := testsupport.OpenFdsNow()
	goleak.VerifyTestMain(m, goleak.Cleanup(func(code int) {
		fmt.Printf("proptest: backends %v, soak x%d, -rapid.checks=%s, -rapid.steps=%s: %d checks, %d operations, %d Poll calls, %d events (%d spurious, allowed by rule 9; %d carried over for lack of room), %d concurrent rounds, in %v\n",
			backendsUnderTest(), soak, flag.Lookup("rapid.checks").Value, flag.Lookup("rapid.steps").Value,
			totals.checks.Load(), totals.ops.Load(), totals.polls.Load(), totals.events.Load(),
			totals.spurious.Load(), totals.carried.Load(), totals.rounds.Load(), time.Since(start).Round(time.Millisecond))
		if after := testsupport.OpenFdsNow(); fdsBefore >= 0 && after > fdsBefore {
			fmt.Fprintf(os.Stderr, "proptest: %d file descriptors leaked (%d open before the tests, %d after)\n", after-fdsBefore, fdsBefore, after)
			if code == 0 {
				code = 1
			}
		}
		os.Exit(code)
	}))
}

func flagSet(name string) (set bool) {
	flag.Visit(func(f *flag.Flag) {
		if f.Name == name {
			set = true
		}
	})
	return set
}

// forBackends runs fn as a subtest per backend under test (one, if
// UNIPOLL_BACKEND names it), with the backend's name.
func forBackends(t *testing.T, fn func(t *testing.T, b string)) {
	for _, b := range backendsUnderTest() {
		t.Run(b, func(t *testing.T) { fn(t, b) })
	}
}

// checkScaled is rapid.Check with factor times the configured number of
// checks (-rapid.checks, already scaled by PROPTEST_SOAK), for properties
// that are cheap and find more with more cases.
func checkScaled(t *testing.T, factor int, prop func(*rapid.T)) {
	t.Helper()
	checkScaledSoak(t, factor, 1, prop)
}

// checkScaledSoak is checkScaled whose soak multiplication is divided by
// soakDiv: properties that mostly sleep (timing) get 100/soakDiv times
// their checks in a soak, so that they do not take all of its time.
func checkScaledSoak(t *testing.T, factor, soakDiv int, prop func(*rapid.T)) {
	t.Helper()
	checkWith(t, func(n int) int {
		n *= factor
		if soak > 1 {
			n = max(n/soakDiv, 1)
		}
		return n
	}, prop)
}

// checkFraction is rapid.Check with the configured number of checks
// (-rapid.checks, scaled by PROPTEST_SOAK) divided by div, at least one.
func checkFraction(t *testing.T, div int, prop func(*rapid.T)) {
	t.Helper()
	checkWith(t, func(n int) int { return max(n/div, 1) }, prop)
}

// checkWith is rapid.Check with scale(n) checks, n the configured number
// (-rapid.checks). Tests in this package do not run in parallel, so
// changing the flag around one Check is safe.
func checkWith(t *testing.T, scale func(n int) int, prop func(*rapid.T)) {
	t.Helper()
	f := flag.Lookup("rapid.checks")
	old := f.Value.String()
	n, err := strconv.Atoi(old)
	if err != nil {
		t.Fatalf("-rapid.checks=%s: %v", old, err)
	}
	_ = flag.Set("rapid.checks", strconv.Itoa(scale(n)))
	defer flag.Set("rapid.checks", old)
	rapid.Check(t, prop)
}
