package polltest

import (
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/unipoll/unipoll/poll"
)

// recorder is a TB that records a failure instead of ending the test, so
// that the helpers' own failures can be checked.
type recorder struct {
	failed bool
	msg    string
}

func (r *recorder) Errorf(format string, args ...any) {
	r.failed, r.msg = true, fmt.Sprintf(format, args...)
}
func (r *recorder) FailNow() { r.failed = true; panic(r) }
func (r *recorder) Helper()  {}

// fails runs f with a recorder and reports whether it failed.
func fails(f func(t TB)) (failed bool) {
	r := &recorder{}
	defer func() {
		if v := recover(); v != nil && v != r {
			panic(v)
		}
		failed = r.failed
	}()
	f(r)
	return r.failed
}

func TestHelpers(t *testing.T) {
	p, err := poll.New()
	require.NoError(t, err)
	defer p.Close()
	reg, set := poll.NewRegistration()
	defer reg.Close()
	require.NoError(t, p.Register(reg, 7, poll.Readable, poll.Edge))

	require.True(t, fails(func(t TB) { WaitEvent(t, p, 7, 20*time.Millisecond) }), "nothing is ready: WaitEvent must fail")
	ExpectNoEvent(t, p, 7, time.Millisecond)

	require.NoError(t, set.SetReadiness(poll.Readable))
	require.True(t, fails(func(t TB) { ExpectNoEvent(t, p, 7, time.Second) }), "the token is ready: ExpectNoEvent must fail")

	require.NoError(t, set.SetReadiness(poll.Readable)) // a new edge
	require.Equal(t, poll.Readable, WaitEvent(t, p, 7, 5*time.Second))
	require.Empty(t, PollOnce(t, p, 0), "Edge: reported once")
}

// New's Poll works during the test and is closed at its cleanup.
func TestNew(t *testing.T) {
	var p *poll.Poll
	t.Run("open", func(t *testing.T) {
		p = New(t)
		_, err := p.Poll(poll.NewEvents(1), 0)
		require.NoError(t, err)
	})
	_, err := p.Poll(poll.NewEvents(1), 0)
	require.ErrorIs(t, err, poll.ErrClosed, "the Poll outlived its test's cleanup")
}
