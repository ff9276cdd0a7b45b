package main

import (
	"strings"
	"testing"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// The tour runs to its end and every stop reports what it came for.
func TestTour(t *testing.T) {
	var out strings.Builder
	if err := tour(&out); err != nil {
		t.Fatalf("tour failed: %v\n%s", err, out.String())
	}
	for _, want := range []string{
		`(socket) is Readable: read "hello through the kernel"`,
		"(tcp) is Readable: accepted 127.0.0.1:",
		"token 0x100000000 from a tokens.Table; keep-alive after 30s idle",
		"closed with a reset, so the client fails: ", // in its read, or its Dial
		"connection reset by peer",
		"(Registration) is Readable: set by another goroutine",
		"(delayed) is Readable: fired by the timing wheel",
		`(channel) is Readable: received`,
		"then the sender closed",
		`(timer) is Readable: "first" expired after`,
		`(timer) is Readable: "second" expired after`,
		"(signal) is Readable: user defined signal 1",
		"(child) is Readable: pid ",
		"exit status 3, not reaped yet",
		"then cmd.Wait() returned at once: exit status 3",
		"(child output) is Readable", // with Hup, if the end came with the data
		`read "hello from the child\n"`,
		"end of the child's output",
	} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("tour output lacks %q:\n%s", want, out.String())
		}
	}
}

// The completion stop reads and writes through a Poll in completion mode
// (or through the default backend where io_uring is refused) and says
// which.
func TestCompletionTour(t *testing.T) {
	var out strings.Builder
	if err := completionTour(&out); err != nil {
		t.Fatalf("completion tour failed: %v\n%s", err, out.String())
	}
	for _, want := range []string{
		`a read "ping" from `,
		`a wrote "pong"; the Poll's next wait sent it, and b read it.`,
	} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("output lacks %q:\n%s", want, out.String())
		}
	}
	if strings.Contains(out.String(), `on "uring"`) && !strings.Contains(out.String(), "from the ring's buffers") {
		t.Errorf("a uring Poll in completion mode read from the descriptor:\n%s", out.String())
	}
}
