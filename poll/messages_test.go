package poll

import (
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// What a user reads when a registration or a TimerQueue is refused: the
// library named once, the sentinel's words, then what was wrong, in the
// names of the calls the user made; and errors.Is on the sentinel.
func TestErrorMessages(t *testing.T) {
	forEachBackend(t, func(t *testing.T, newPoll newPollFunc) {
		p := newPoll(t)
		reg, _ := NewRegistration()
		defer reg.Close()
		q := NewTimerQueue(0)
		_, addErr := q.Add(time.Second, 1)
		for _, tc := range []struct {
			err      error
			want     string
			sentinel error
		}{
			{p.Register(reg, 1, 0, Edge), "unipoll: invalid interest: empty, so the source could never be reported", ErrInvalidInterest},
			{p.Register(reg, 1, Readable|0x80, Edge), "unipoll: invalid interest: Readable|0x80: unknown bits 0x80", ErrInvalidInterest},
			{addErr, "unipoll: not registered: TimerQueue.Add before the queue was registered with a Poll", ErrNotRegistered},
		} {
			require.ErrorIs(t, tc.err, tc.sentinel)
			require.EqualError(t, tc.err, tc.want)
			require.Equal(t, 1, strings.Count(tc.err.Error(), "unipoll: "), "%q", tc.err)
		}
	})
}
