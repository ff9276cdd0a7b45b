//go:build unix

package sigrelay_test

import (
	"fmt"
	"syscall"

	"github.com/unipoll/unipoll/internal/sigrelay"
)

// printer is a Subscriber that hands each delivery to a channel without
// blocking the relay's goroutine.
type printer chan syscall.Signal

func (p printer) Deliver(sig syscall.Signal) {
	select {
	case p <- sig:
	default: // one waiting is enough: it stands for this one too
	}
}

// Two subscribers of one signal: the relay asks os/signal once, and both see
// the delivery. Unsubscribing the last one stops the relay's goroutine.
func Example() {
	a, b := make(printer, 1), make(printer, 1)
	sigrelay.Subscribe(syscall.SIGUSR2, a)
	sigrelay.Subscribe(syscall.SIGUSR2, b)
	fmt.Println("signals relayed:", sigrelay.Active(), "subscribers:", sigrelay.Subscribed(syscall.SIGUSR2))

	_ = syscall.Kill(syscall.Getpid(), syscall.SIGUSR2)
	fmt.Println("a got", <-a)
	fmt.Println("b got", <-b)

	sigrelay.Unsubscribe(syscall.SIGUSR2, a)
	sigrelay.Unsubscribe(syscall.SIGUSR2, b)
	fmt.Println("signals relayed:", sigrelay.Active())
	// Output:
	// signals relayed: 1 subscribers: 2
	// a got user defined signal 2
	// b got user defined signal 2
	// signals relayed: 0
}
