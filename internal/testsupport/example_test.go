package testsupport_test

import (
	"fmt"
	"sync/atomic"

	"github.com/unipoll/unipoll/internal/testsupport"
)

// Eventually waits for another goroutine's work without sleeping.
func ExampleEventually() {
	var done atomic.Bool
	go done.Store(true)
	fmt.Println(testsupport.Eventually(testsupport.EventWait, done.Load))
	// Output: true
}
