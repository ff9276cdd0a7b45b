package socket

import "golang.org/x/sys/unix"

// Darwin names the idle time TCP_KEEPALIVE.
var (
	keepIdle     = tcpOpt{unix.IPPROTO_TCP, unix.TCP_KEEPALIVE, "TCP_KEEPALIVE"}
	keepInterval = tcpOpt{unix.IPPROTO_TCP, unix.TCP_KEEPINTVL, "TCP_KEEPINTVL"}
	keepCount    = tcpOpt{unix.IPPROTO_TCP, unix.TCP_KEEPCNT, "TCP_KEEPCNT"}
	userTimeout  = tcpOpt{name: "TCP_USER_TIMEOUT"}
)
