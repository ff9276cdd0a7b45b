//go:build netbsd

package sys

// evReceipt is 0: x/sys has no EV_RECEIPT for netbsd, so changes are
// submitted one per kevent call.
const evReceipt = 0
