package socket

import "golang.org/x/sys/unix"

var (
	keepIdle     = tcpOpt{unix.IPPROTO_TCP, unix.TCP_KEEPIDLE, "TCP_KEEPIDLE"}
	keepInterval = tcpOpt{unix.IPPROTO_TCP, unix.TCP_KEEPINTVL, "TCP_KEEPINTVL"}
	keepCount    = tcpOpt{unix.IPPROTO_TCP, unix.TCP_KEEPCNT, "TCP_KEEPCNT"}
	userTimeout  = tcpOpt{unix.IPPROTO_TCP, unix.TCP_USER_TIMEOUT, "TCP_USER_TIMEOUT"}
)
