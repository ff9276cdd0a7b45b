package netloop

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"
)

// runEnd is how a Run ended: its result, and when.
type runEnd struct {
	err error
	at  time.Time
}

// runForShutdown runs g until a Shutdown stops it; the channel gets how
// Run ended. At the test's end a Run still going is cancelled, and g is
// closed.
func runForShutdown(t *testing.T, g *Group) <-chan runEnd {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	ended := make(chan runEnd, 1)
	done := make(chan struct{})
	go func() {
		defer close(done)
		err := g.Run(ctx, nil)
		ended <- runEnd{err, time.Now()}
	}()
	t.Cleanup(func() {
		cancel()
		select {
		case <-done:
		case <-time.After(waitLimit):
			t.Error("Group.Run did not return")
		}
		_ = g.Close()
	})
	return ended
}

// logBuffer is an io.Writer for a slog.TextHandler that the test reads
// while the Group writes.
type logBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *logBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *logBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// line returns the first record whose text has every one of parts, or "".
func (l *logBuffer) line(parts ...string) string {
	for _, ln := range strings.Split(l.String(), "\n") {
		all := ln != ""
		for _, p := range parts {
			all = all && strings.Contains(ln, p)
		}
		if all {
			return ln
		}
	}
	return ""
}

// waitLine waits for a record with every one of parts and returns it.
func (l *logBuffer) waitLine(t *testing.T, parts ...string) string {
	t.Helper()
	eventually(t, "a log record with "+strings.Join(parts, ", "), func() bool { return l.line(parts...) != "" })
	return l.line(parts...)
}

// newTestLogger returns a Logger writing text records, Debug and up, into
// the returned buffer.
func newTestLogger() (*slog.Logger, *logBuffer) {
	buf := new(logBuffer)
	return slog.New(slog.NewTextHandler(buf, &slog.HandlerOptions{Level: slog.LevelDebug})), buf
}

// waitShutdown waits for a Shutdown started in a goroutine to return.
func waitShutdown(t *testing.T, ch <-chan error) error {
	t.Helper()
	select {
	case err := <-ch:
		return err
	case <-time.After(2 * waitLimit):
		t.Fatal("Shutdown did not return")
		return errors.New("unreachable")
	}
}
