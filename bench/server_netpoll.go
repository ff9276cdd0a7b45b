//go:build linux

package main

// github.com/cloudwego/netpoll: an EventLoop serving a Listener, with the
// OnRequest handler of its echo example (read what is there, write it
// back, flush).

import (
	"context"

	"github.com/cloudwego/netpoll"
)

func init() { goServers["netpoll"] = serveNetpoll }

func serveNetpoll(addr string, ready func()) error {
	l, err := netpoll.CreateListener("tcp", addr)
	if err != nil {
		return err
	}
	loop, err := netpoll.NewEventLoop(func(ctx context.Context, c netpoll.Connection) error {
		r, w := c.Reader(), c.Writer()
		defer r.Release()
		msg, err := r.ReadString(r.Len())
		if err != nil {
			return err
		}
		if _, err := w.WriteString(msg); err != nil {
			return err
		}
		return w.Flush()
	})
	if err != nil {
		return err
	}
	ready()
	return loop.Serve(l)
}
