package main

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"net"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// client is a minimal RESP2 client, enough to test the server with: it
// sends commands as arrays of bulk strings, or raw bytes, and reads
// replies as Go values: string (simple string), respError, int64, []byte
// (bulk string; nil for the nil bulk), []any (array).
type client struct {
	c net.Conn
	r *bufio.Reader
}

type respError string

func (e respError) Error() string { return string(e) }

func dial(t testing.TB, addr string) *client {
	t.Helper()
	c, err := net.Dial("tcp", addr)
	require.NoError(t, err)
	require.NoError(t, c.SetDeadline(time.Now().Add(30*time.Second)))
	t.Cleanup(func() { _ = c.Close() })
	return &client{c: c, r: bufio.NewReader(c)}
}

func encode(args ...string) []byte {
	b := []byte("*" + strconv.Itoa(len(args)) + "\r\n")
	for _, a := range args {
		b = append(b, "$"+strconv.Itoa(len(a))+"\r\n"+a+"\r\n"...)
	}
	return b
}

func (c *client) send(args ...string) error {
	_, err := c.c.Write(encode(args...))
	return err
}

func (c *client) do(args ...string) (any, error) {
	if err := c.send(args...); err != nil {
		return nil, err
	}
	return c.read()
}

func (c *client) line() (string, error) {
	s, err := c.r.ReadString('\n')
	if err != nil {
		return "", err
	}
	if !strings.HasSuffix(s, "\r\n") {
		return "", fmt.Errorf("reply line %q not terminated by CRLF", s)
	}
	return s[:len(s)-2], nil
}

func (c *client) read() (any, error) {
	l, err := c.line()
	if err != nil {
		return nil, err
	}
	if l == "" {
		return nil, errors.New("empty reply line")
	}
	switch l[0] {
	case '+':
		return l[1:], nil
	case '-':
		return respError(l[1:]), nil
	case ':':
		return strconv.ParseInt(l[1:], 10, 64)
	case '$':
		n, err := strconv.Atoi(l[1:])
		if err != nil {
			return nil, err
		}
		if n < 0 {
			return []byte(nil), nil
		}
		b := make([]byte, n+2)
		if _, err := io.ReadFull(c.r, b); err != nil {
			return nil, err
		}
		return b[:n], nil
	case '*':
		n, err := strconv.Atoi(l[1:])
		if err != nil {
			return nil, err
		}
		out := []any{}
		for range n {
			v, err := c.read()
			if err != nil {
				return nil, err
			}
			out = append(out, v)
		}
		return out, nil
	}
	return nil, fmt.Errorf("unknown reply type %q", l)
}

// mustDo runs a command and returns its reply, failing the test on an I/O
// error.
func (c *client) mustDo(t testing.TB, args ...string) any {
	t.Helper()
	v, err := c.do(args...)
	require.NoError(t, err, "%v", args)
	return v
}
