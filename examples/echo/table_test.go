//go:build unix

package main

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/unipoll/unipoll/poll"
)

func TestConnTableReusedSlotIgnoresOldToken(t *testing.T) {
	var tab connTable
	a, b := &conn{}, &conn{}
	ta := tab.add(a)
	require.Same(t, a, tab.get(ta))
	tab.remove(ta)
	assert.Nil(t, tab.get(ta), "removed")

	tb := tab.add(b) // takes a's slot
	assert.Equal(t, uint32(ta), uint32(tb), "slot reused")
	assert.NotEqual(t, ta, tb, "new generation")
	assert.Nil(t, tab.get(ta), "an old token must not name the slot's new connection")
	assert.Same(t, b, tab.get(tb))

	tab.remove(ta) // stale: must not remove b
	assert.Same(t, b, tab.get(tb))
	assert.Equal(t, 1, tab.len())
}

func TestConnTableTokensAvoidFixedOnes(t *testing.T) {
	var tab connTable
	seen := map[poll.Token]bool{}
	for range 100 {
		tok := tab.add(&conn{})
		assert.NotContains(t, []poll.Token{tokListener, tokStop, tokBackoff, poll.ReservedToken}, tok)
		assert.False(t, seen[tok], "token handed out twice")
		seen[tok] = true
	}
	assert.Nil(t, tab.get(tokStop))
	assert.Nil(t, tab.get(poll.Token(1)<<32|1000), "index past the table")

	n := 0
	tab.each(func(tok poll.Token, c *conn) {
		n++
		tab.remove(tok)
	})
	assert.Equal(t, 100, n)
	assert.Equal(t, 0, tab.len())
}
