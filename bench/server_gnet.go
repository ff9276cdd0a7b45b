//go:build linux

package main

// github.com/panjf2000/gnet/v2 (v2.9.7): the echo server of its README, an
// event engine whose OnTraffic writes back what it reads, with one event
// loop per CPU (WithMulticore).

import (
	"github.com/panjf2000/gnet/v2"
)

func init() { goServers["gnet"] = serveGnet }

type gnetEcho struct {
	gnet.BuiltinEventEngine
	ready func()
}

func (e *gnetEcho) OnBoot(gnet.Engine) gnet.Action {
	e.ready()
	return gnet.None
}

func (e *gnetEcho) OnTraffic(c gnet.Conn) gnet.Action {
	buf, _ := c.Next(-1)
	_, _ = c.Write(buf)
	return gnet.None
}

func serveGnet(addr string, ready func()) error {
	return gnet.Run(&gnetEcho{ready: ready}, "tcp://"+addr, gnet.WithMulticore(true))
}
