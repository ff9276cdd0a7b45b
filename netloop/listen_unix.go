package netloop

import (
	"fmt"

	"github.com/unipoll/unipoll/eventloop"
	"github.com/unipoll/unipoll/socket"
)

// UnixAcceptFunc receives a connection a Group's Unix-domain listener
// accepted, on the Loop it is to live on (typically it calls Add: a
// *socket.UnixConn is a Stream). It owns the connection.
type UnixAcceptFunc func(l *eventloop.Loop, c *socket.UnixConn)

// ListenUnix listens on the Unix-domain stream socket path (see
// socket.ListenUnix: the file must not exist yet, and Close removes it;
// on Linux "@name" is an abstract socket) and hands every connection
// accepted there to accept, on the Loop chosen by the Group's Balance.
// One listener on the first Loop accepts: SO_REUSEPORT does not spread
// Unix-domain connections. Close the Listener to stop listening;
// Group.Shutdown and Close close it too.
func (g *Group) ListenUnix(path string, accept UnixAcceptFunc) (*Listener, error) {
	if g == nil || len(g.loops) == 0 {
		return nil, errZeroGroup
	}
	if accept == nil {
		return nil, fmt.Errorf("%w: netloop: ListenUnix needs a UnixAcceptFunc", ErrInvalidArgument)
	}
	if path == "" {
		return nil, fmt.Errorf("%w: netloop: ListenUnix needs a path", ErrInvalidArgument)
	}
	s, err := socket.ListenUnix(path)
	if err != nil {
		return nil, err
	}
	p, err := serveStream(g, g.loops[0], s, accept, false)
	if err != nil {
		return nil, err
	}
	return g.keep(&Listener{g: g, addr: s.Addr(), parts: []listenPart{p}})
}
