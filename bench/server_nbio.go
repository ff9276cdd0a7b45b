//go:build linux

package main

// github.com/lesismal/nbio (v1.6.8): the engine of its quick start, whose
// OnData writes a copy of what it reads back.

import (
	"github.com/lesismal/nbio"
)

func init() { goServers["nbio"] = serveNbio }

func serveNbio(addr string, ready func()) error {
	engine := nbio.NewEngine(nbio.Config{
		Network:            "tcp",
		Addrs:              []string{addr},
		MaxWriteBufferSize: 6 * 1024 * 1024,
	})
	engine.OnData(func(c *nbio.Conn, data []byte) {
		_, _ = c.Write(append([]byte{}, data...))
	})
	if err := engine.Start(); err != nil {
		return err
	}
	ready()
	select {} // until the runner stops the process
}
