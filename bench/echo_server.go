//go:build linux

package main

// The echo servers that live in this binary (-role server -server NAME):
// each peer library's echo server, written as that library's own
// documentation shows. The runner starts one per measurement, in a process
// of its own, and stops it with SIGTERM (the default action: exit).

import (
	"flag"
	"fmt"
	"maps"
	"slices"
)

// goServers maps a server name to a function that serves echo on addr
// until the process is killed. ready is called once the server accepts
// connections. A name in goProxies (server_netproxy.go) is a proxy
// instead, relaying to -backend.
var goServers = map[string]func(addr string, ready func()) error{}

func serverMain(args []string) error {
	fs := flag.NewFlagSet("server", flag.ContinueOnError)
	name := fs.String("server", "", "which server")
	addr := fs.String("addr", "127.0.0.1:0", "address to listen on")
	backend := fs.String("backend", "", "a proxy (goProxies): the backend it relays to")
	cert := fs.String("tls-cert", "", "a TLS server (tlsServers): its certificate, a PEM file")
	key := fs.String("tls-key", "", "a TLS server: the certificate's key, a PEM file")
	stats := fs.String("stats", "", "write the goroutine count and live heap to this file at each SIGUSR1")
	fs.DurationVar(&tlsHandshakeTimeout, "tls-handshake-timeout", 0, "tls-unipoll: Config.HandshakeTimeout (0: netloop's default)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	reportStatsOnSignal(*stats)
	if ts, ok := tlsServers[*name]; ok {
		return ts(*addr, *cert, *key, func() { fmt.Println("READY") })
	}
	if px, ok := goProxies[*name]; ok {
		return px(*addr, *backend, func() { fmt.Println("READY") })
	}
	serve, ok := goServers[*name]
	if !ok {
		return fmt.Errorf("no server %q (have %v)", *name, slices.Sorted(maps.Keys(goServers)))
	}
	return serve(*addr, func() { fmt.Println("READY") })
}
