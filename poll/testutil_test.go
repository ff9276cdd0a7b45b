package poll

// The one home of the helpers that more than one test file of package poll
// uses: this file (Polls, registrations, backends, modes and the white-box
// check of an empty Poll), testutil_fds_test.go (descriptors),
// testutil_events_test.go (polling and asserting events) and
// testutil_linux_test.go. A helper that serves a single file stays with it;
// helpers that tests of other packages share too are in
// internal/testsupport. Their names and signatures are stable: add new
// helpers rather than changing these.
//
// Conventions:
//   - Every descriptor a helper creates is closed by t.Cleanup, unless the
//     test closes it first with closeFd (never with unix.Close directly: the
//     cleanup would then close whatever reused the number).
//   - Every Poll a helper creates is closed by t.Cleanup. Polls are created
//     after the descriptors they watch, so (cleanups running last-in
//     first-out) a Poll is closed before its descriptors.
//   - Waiting is always for a condition with a deadline, never time.Sleep.
//     A short Poll timeout (noEventWait) is how a test asserts that nothing
//     is reported.

import (
	"errors"
	"slices"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/unipoll/unipoll/internal/testsupport"
	"github.com/unipoll/unipoll/sys"
)

const (
	// noEventWait is the Poll timeout used to assert that nothing is
	// reported (testsupport.NoEventWait).
	noEventWait = testsupport.NoEventWait
	// eventWait is the deadline for something that must happen
	// (testsupport.EventWait).
	eventWait = testsupport.EventWait
)

// ---------------------------------------------------------------------------
// Backends and Polls

// backends returns the backend names this build has (sys.Backends()). It
// fails the test if there are none.
func backends(t testing.TB) []string {
	t.Helper()
	b := sys.Backends()
	require.NotEmpty(t, b, "sys.Backends() is empty")
	return b
}

// newPollFunc opens a Poll on one backend, closed at the test's cleanup.
type newPollFunc func(t testing.TB) *Poll

// forEachBackend runs fn as a subtest named after each backend in
// sys.Backends(). newPoll opens a Poll on that backend with
// NewWithConfig(Config{Backend: name}) and closes it at cleanup.
func forEachBackend(t *testing.T, fn func(t *testing.T, newPoll newPollFunc)) {
	t.Helper()
	for _, name := range backends(t) {
		t.Run(name, func(t *testing.T) {
			fn(t, func(t testing.TB) *Poll {
				t.Helper()
				return newPollBackend(t, name)
			})
		})
	}
}

// newPollBackend opens a Poll on the named backend and closes it at cleanup
// (a Close that the test already did is fine).
func newPollBackend(t testing.TB, backend string) *Poll {
	t.Helper()
	return newPollConfig(t, Config{Backend: backend})
}

// newPollConfig opens a Poll with c and closes it at cleanup.
func newPollConfig(t testing.TB, c Config) *Poll {
	t.Helper()
	p, err := NewWithConfig(c)
	require.NoError(t, err, "NewWithConfig(%+v)", c)
	if c.Backend != "" {
		require.Equal(t, c.Backend, p.Backend())
	}
	t.Cleanup(func() {
		if err := p.Close(); err != nil && !errors.Is(err, ErrClosed) {
			t.Errorf("cleanup: Poll.Close: %v", err)
		}
	})
	return p
}

// ---------------------------------------------------------------------------
// Registrations

// newRegistered makes a Registration, registers it with p and closes it at
// cleanup.
func newRegistered(t testing.TB, p *Poll, tok Token, interest Ready, opts PollOpt) (*Registration, *SetReadiness) {
	t.Helper()
	r, s := newUnregistered(t)
	require.NoError(t, p.Register(r, tok, interest, opts), "Register(%d, %s, %s)", tok, interest, opts)
	return r, s
}

// newUnregistered makes a Registration closed at cleanup (a Close that the
// test already did is fine).
func newUnregistered(t testing.TB) (*Registration, *SetReadiness) {
	t.Helper()
	r, s := NewRegistration()
	t.Cleanup(func() {
		if err := r.Close(); err != nil && !errors.Is(err, ErrClosed) {
			t.Errorf("cleanup: Registration.Close: %v", err)
		}
	})
	return r, s
}

// ---------------------------------------------------------------------------
// Descriptors

// ---------------------------------------------------------------------------
// White box

// requireQueueEmpty checks that p holds no Registration: its readiness
// queue is empty (only the stub), the consumer holds no node and the
// timing wheel has no entry. Call it with no Poll in progress.
func requireQueueEmpty(t testing.TB, p *Poll) {
	t.Helper()
	p.pollMu.Lock()
	defer p.pollMu.Unlock()
	q := &p.queue
	require.True(t, q.tail == &q.stub && q.head.Load() == &q.stub && q.stub.next.Load() == nil,
		"readiness queue still holds nodes")
	require.Zero(t, p.held.Len(), "held list not empty")
	require.Zero(t, p.wheel.Pending(), "timing wheel not empty")
	require.NoError(t, p.wheel.Check(), "timing wheel")
	p.wheel.Lock()
	defer p.wheel.Unlock()
	require.Zero(t, p.wheel.nodes.Len(), "wheel still holds Registrations")
}

// modes are the trigger modes every contract test runs in, named for
// subtests.
var modes = []struct {
	name string
	opts PollOpt
}{
	{"Edge", Edge},
	{"Level", Level},
	{"Oneshot", Oneshot}, // Level|Oneshot
	{"EdgeOneshot", Edge | Oneshot},
}

// forModes runs fn as a subtest per mode in modes whose name is in names
// (all of them when names is empty).
func forModes(t *testing.T, names []string, fn func(t *testing.T, opts PollOpt)) {
	for _, m := range modes {
		if len(names) > 0 && !slices.Contains(names, m.name) {
			continue
		}
		t.Run(m.name, func(t *testing.T) { fn(t, m.opts) })
	}
}
