//go:build unix && !linux && !darwin && !freebsd && !netbsd && !dragonfly

package socket

// OpenBSD (and any other unix) has no per-socket keep-alive timings: the
// system-wide ones apply.
var (
	keepIdle     = tcpOpt{name: "TCP_KEEPIDLE"}
	keepInterval = tcpOpt{name: "TCP_KEEPINTVL"}
	keepCount    = tcpOpt{name: "TCP_KEEPCNT"}
	userTimeout  = tcpOpt{name: "TCP_USER_TIMEOUT"}
)
