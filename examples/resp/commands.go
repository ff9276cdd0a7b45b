package main

import (
	"math"
	"strings"
)

// A command reads its arguments and appends its reply. args[0] is the
// command's name. Replies and errors are worded as redis-server words
// them, so clients that parse them (redis-cli, redis-benchmark) work
// unchanged.
type command struct {
	arity int // as redis: n exactly, -n at least n (the name included)
	run   func(s *session, args [][]byte, out []byte) []byte
}

var commands = map[string]command{
	"ping":    {-1, cmdPing},
	"echo":    {2, cmdEcho},
	"set":     {-3, cmdSet},
	"get":     {2, cmdGet},
	"del":     {-2, cmdDel},
	"exists":  {-2, cmdExists},
	"incr":    {2, cmdIncr},
	"mget":    {-2, cmdMget},
	"quit":    {1, cmdQuit},
	"config":  {-2, cmdConfig},
	"command": {-1, cmdCommand},
	"info":    {-1, cmdInfo},
}

// lookup finds a command by name, in any case, without allocating for
// names up to 16 bytes.
func lookup(name []byte) (command, bool) {
	var buf [16]byte
	if len(name) > len(buf) {
		c, ok := commands[strings.ToLower(string(name))]
		return c, ok
	}
	for i, b := range name {
		if b >= 'A' && b <= 'Z' {
			b += 'a' - 'A'
		}
		buf[i] = b
	}
	c, ok := commands[string(buf[:len(name)])]
	return c, ok
}

// execute runs one request and appends its reply.
func (s *session) execute(args [][]byte, out []byte) []byte {
	c, ok := lookup(args[0])
	if !ok {
		return appendError(out, unknownCommand(args))
	}
	if c.arity > 0 && len(args) != c.arity || c.arity < 0 && len(args) < -c.arity {
		return appendError(out, "ERR wrong number of arguments for '"+strings.ToLower(string(args[0]))+"' command")
	}
	return c.run(s, args, out)
}

// unknownCommand words the error as redis 7 does.
func unknownCommand(args [][]byte) string {
	var b strings.Builder
	b.WriteString("ERR unknown command '")
	b.WriteString(sanitize(args[0], 128))
	b.WriteString("', with args beginning with: ")
	for _, a := range args[1:] {
		if b.Len() > 512 {
			break
		}
		b.WriteString("'")
		b.WriteString(sanitize(a, 128))
		b.WriteString("' ")
	}
	return b.String()
}

// sanitize keeps an argument quoted in an error from breaking the reply
// line.
func sanitize(a []byte, max int) string {
	if len(a) > max {
		a = a[:max]
	}
	return strings.Map(func(r rune) rune {
		if r == '\r' || r == '\n' {
			return ' '
		}
		return r
	}, string(a))
}

func cmdPing(s *session, args [][]byte, out []byte) []byte {
	switch len(args) {
	case 1:
		return appendSimple(out, "PONG")
	case 2:
		return appendBulk(out, args[1])
	}
	return appendError(out, "ERR wrong number of arguments for 'ping' command")
}

func cmdEcho(s *session, args [][]byte, out []byte) []byte { return appendBulk(out, args[1]) }

func cmdGet(s *session, args [][]byte, out []byte) []byte {
	out, ok := s.srv.db.get(args[1], out, appendBulk)
	if !ok {
		return appendNil(out)
	}
	return out
}

// cmdSet is SET key value [EX seconds | PX milliseconds] [NX | XX].
func cmdSet(s *session, args [][]byte, out []byte) []byte {
	var exp int64
	mode := setAlways
	for i := 3; i < len(args); i++ {
		opt := args[i]
		switch {
		case eqFold(opt, "nx") && mode == setAlways:
			mode = setNX
		case eqFold(opt, "xx") && mode == setAlways:
			mode = setXX
		case (eqFold(opt, "ex") || eqFold(opt, "px")) && exp == 0 && i+1 < len(args):
			i++
			n, ok := parseInteger(args[i])
			if !ok {
				return appendError(out, "ERR value is not an integer or out of range")
			}
			unit := int64(1e9)
			if eqFold(opt, "px") {
				unit = 1e6
			}
			if n <= 0 || n > math.MaxInt64/unit-now()/unit {
				return appendError(out, "ERR invalid expire time in 'set' command")
			}
			exp = now() + n*unit
		default:
			return appendError(out, "ERR syntax error")
		}
	}
	if !s.srv.db.set(args[1], args[2], exp, mode) {
		return appendNil(out)
	}
	return appendSimple(out, "OK")
}

func cmdDel(s *session, args [][]byte, out []byte) []byte {
	n := 0
	for _, k := range args[1:] {
		if s.srv.db.del(k) {
			n++
		}
	}
	return appendInt(out, int64(n))
}

func cmdExists(s *session, args [][]byte, out []byte) []byte {
	n := 0
	for _, k := range args[1:] {
		if s.srv.db.exists(k) {
			n++
		}
	}
	return appendInt(out, int64(n))
}

func cmdIncr(s *session, args [][]byte, out []byte) []byte {
	n, err := s.srv.db.incr(args[1])
	if err != nil {
		return appendError(out, err.Error())
	}
	return appendInt(out, n)
}

func cmdMget(s *session, args [][]byte, out []byte) []byte {
	out = appendArrayHeader(out, len(args)-1)
	for _, k := range args[1:] {
		var ok bool
		if out, ok = s.srv.db.get(k, out, appendBulk); !ok {
			out = appendNil(out)
		}
		if len(out) > s.srv.maxReply {
			// Do not build a reply the Conn would refuse anyway.
			return nil
		}
	}
	return out
}

func cmdQuit(s *session, args [][]byte, out []byte) []byte {
	s.quit = true
	return appendSimple(out, "OK")
}

// configs are the parameters CONFIG GET knows: the two redis-benchmark
// asks about before it starts (it prints them, and warns if it cannot),
// with what is true of this server: no persistence.
var configs = []struct{ name, value string }{{"save", ""}, {"appendonly", "no"}}

// cmdConfig is CONFIG GET name...: the pairs for the names it knows.
func cmdConfig(s *session, args [][]byte, out []byte) []byte {
	if !eqFold(args[1], "get") {
		return appendError(out, "ERR unknown subcommand '"+sanitize(args[1], 128)+"'. Try CONFIG HELP.")
	}
	var found [][2]string
	for _, a := range args[2:] {
		for _, c := range configs {
			if eqFold(a, c.name) {
				found = append(found, [2]string{c.name, c.value})
			}
		}
	}
	out = appendArrayHeader(out, 2*len(found))
	for _, f := range found {
		out = appendBulk(out, []byte(f[0]))
		out = appendBulk(out, []byte(f[1]))
	}
	return out
}

// cmdCommand answers COMMAND (redis-cli asks COMMAND DOCS for its hints)
// with an empty list.
func cmdCommand(s *session, args [][]byte, out []byte) []byte {
	return appendArrayHeader(out, 0)
}

// eqFold reports whether b equals the lower-case ASCII word w in any case.
func eqFold(b []byte, w string) bool {
	if len(b) != len(w) {
		return false
	}
	for i := range b {
		c := b[i]
		if c >= 'A' && c <= 'Z' {
			c += 'a' - 'A'
		}
		if c != w[i] {
			return false
		}
	}
	return true
}
