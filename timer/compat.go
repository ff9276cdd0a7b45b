package timer

// Poll is TryRecv under its old name.
//
// Deprecated: use TryRecv, the one name unipoll gives to taking the next
// item without blocking. Poll stays only until the last caller in this
// module (eventloop's AfterFunc) has moved to TryRecv; it is then removed.
func (t *Timer[T]) Poll() (T, bool) { return t.TryRecv() }
