package wheel

// corrupted reports a broken invariant of the wheel, as the Go runtime's
// netpoller throws on "corrupted polldesc", so that a property test fails
// at the step that broke it: unlink checks that an entry is in the slot it
// names, and Expire that every entry of a slot it takes names that slot
// (invariant 1). Only checks guarded by debugChecks call it.
func corrupted(what string) {
	panic("unipoll: corrupted timing wheel: " + what)
}
