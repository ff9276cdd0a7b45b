//go:build unix && !linux

package sys

// newFdWaker returns the pollable waker of this system: a pipe, for want of
// eventfd.
func newFdWaker() (fdWaker, error) {
	p, err := newPipeWaker()
	if err != nil {
		return nil, err
	}
	return p, nil
}
