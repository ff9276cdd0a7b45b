package timer

import (
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/unipoll/unipoll/poll"
)

// Set before Register says so in the words of the calls the user makes
// (the Timer, Set, a Poll), not in those of the TimerQueue underneath,
// and still matches ErrNotRegistered. Registered, Set works.
func TestSetBeforeRegisterMessage(t *testing.T) {
	tm, err := New[int]()
	require.NoError(t, err)
	_, err = tm.Set(time.Second, 1)
	require.ErrorIs(t, err, ErrNotRegistered)
	require.ErrorIs(t, err, poll.ErrNotRegistered)
	require.EqualError(t, err, "unipoll: not registered: Timer.Set before the Timer was registered with a Poll")
	require.NotContains(t, err.Error(), "TimerQueue")
	require.Equal(t, 1, strings.Count(err.Error(), "unipoll: "), "the library is named once")

	p, err := poll.New()
	require.NoError(t, err)
	defer p.Close()
	require.NoError(t, p.Register(tm, tok, poll.Readable, poll.Edge))
	_, err = tm.Set(time.Second, 1)
	require.NoError(t, err)
}
