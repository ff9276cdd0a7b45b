//go:build unix

package main

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/unipoll/unipoll/poll"
	"github.com/unipoll/unipoll/tokens"
)

// The server's own tokens stay below the ones conns hands out, so an event
// of a fixed source is never taken for a connection's.
func TestFixedTokensBelowTableTokens(t *testing.T) {
	for _, tok := range []poll.Token{tokListener, tokStop, tokBackoff} {
		require.Less(t, tok, tokens.MinToken)
	}
}
