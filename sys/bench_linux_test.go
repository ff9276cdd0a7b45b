package sys_test

// The Linux baseline of bench_test.go: an eventfd and epoll, nothing else.

import (
	"testing"

	"github.com/unipoll/unipoll/internal/testsupport"
)

func init() {
	benchWakeBaselines = append(benchWakeBaselines, benchWakeBaseline{
		name: "raw-eventfd",
		open: func(b *testing.B) benchWakeEnd { return rawEventfdEnd{testsupport.NewRawEventfd(b, true)} },
	})
}

// rawEventfdEnd is the floor: an eventfd registered edge-triggered with its
// own epoll instance, as the epoll selector registers its waker. A wake-up
// is one write(2), a wait one epoll_wait(2); nothing else.
type rawEventfdEnd struct{ r *testsupport.RawEventfd }

func (e rawEventfdEnd) wake() error         { return e.r.Add(1) }
func (e rawEventfdEnd) wait() error         { return e.r.Wait() }
func (e rawEventfdEnd) poll() (bool, error) { return e.r.Poll() }
