package netloop

import (
	"context"
	"errors"
	"log/slog"
	"net"
	"time"
)

// addressed is a Stream that knows its addresses (*socket.TCPConn,
// *socket.UnixConn).
type addressed interface {
	LocalAddr() net.Addr
	RemoteAddr() net.Addr
}

// logEnd writes Config.Logger's record of a Conn that ends by a timeout
// or with a reset; other ends are ordinary and not logged. It runs in
// Removed, once per Conn, so the cost of a record is no one's hot path.
func (c *Conn) logEnd() {
	lg := c.cfg.Logger
	if lg == nil {
		return
	}
	limit := c.timeoutOf(c.err)
	if limit == 0 && !c.reset {
		return
	}
	msg := "netloop: conn reset"
	attrs := make([]slog.Attr, 0, 4)
	attrs = append(attrs, slog.Any("err", c.err))
	if a, ok := c.s.(addressed); ok {
		attrs = append(attrs, slog.String("local", addrString(a.LocalAddr())), slog.String("remote", addrString(a.RemoteAddr())))
	}
	if limit > 0 {
		msg = "netloop: conn timed out"
		attrs = append(attrs, slog.Duration("timeout", limit))
	}
	lg.LogAttrs(context.Background(), slog.LevelDebug, msg, attrs...)
}

// timeoutOf is the limit that err, the Conn's end, says passed; 0 for an
// end that is not a timeout.
func (c *Conn) timeoutOf(err error) time.Duration {
	switch {
	case err == nil:
		return 0
	case errors.Is(err, ErrReadTimeout):
		return c.cfg.ReadTimeout
	case errors.Is(err, ErrIdleTimeout):
		return c.cfg.IdleTimeout
	case errors.Is(err, ErrWriteTimeout):
		return c.cfg.WriteTimeout
	}
	return 0
}

// addrString is a's text, "" for none (an unnamed Unix socket's peer).
func addrString(a net.Addr) string {
	if a == nil {
		return ""
	}
	return a.String()
}
