package main

import "strconv"

// cmdInfo is INFO [section...]: what a user watching the limits wants,
// in redis-server's format and under its names (a bulk string of
// "# Section" headers and "name:value" lines), so tools that read INFO
// find them. Every section is given whatever is asked.
//
//   - connected_clients: the clients connected now.
//   - mem_clients_normal: the bytes all clients hold unconsumed (partial
//     requests), which -max-client-memory bounds.
//   - maxmemory_clients: that bound.
//   - evicted_clients: the clients refused for passing it.
func cmdInfo(s *session, args [][]byte, out []byte) []byte {
	m := &s.srv.mem
	var b []byte
	b = append(b, "# Clients\r\nconnected_clients:"...)
	b = strconv.AppendInt(b, s.srv.clients.Load(), 10)
	b = append(b, "\r\n\r\n# Memory\r\nmem_clients_normal:"...)
	b = strconv.AppendInt(b, m.held.Load(), 10)
	b = append(b, "\r\nmaxmemory_clients:"...)
	b = strconv.AppendInt(b, m.limit, 10)
	b = append(b, "\r\n\r\n# Stats\r\nevicted_clients:"...)
	b = strconv.AppendInt(b, m.refused.Load(), 10)
	b = append(b, "\r\n"...)
	return appendBulk(out, b)
}
