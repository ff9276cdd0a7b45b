package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os/exec"
	"syscall"
	"time"

	"github.com/unipoll/unipoll/channel"
	"github.com/unipoll/unipoll/child"
	"github.com/unipoll/unipoll/eventloop"
	"github.com/unipoll/unipoll/netloop"
	"github.com/unipoll/unipoll/poll"
	"github.com/unipoll/unipoll/signal"
	"github.com/unipoll/unipoll/socket"
	"github.com/unipoll/unipoll/timer"
)

// loopTour is the same tour on an eventloop.Loop: each source gets its own
// handler instead of a switch on tokens, the Loop's timer runs a function
// after a delay, a function posted from another goroutine runs on the
// loop, a netloop Conn echoes a client, and once every kind has been
// heard from, netloop.Shutdown drains the Conn and stops the loop.
func loopTour(out io.Writer) error {
	say := func(format string, args ...any) { fmt.Fprintf(out, format+"\n", args...) }

	l, err := eventloop.New(eventloop.Config{})
	if err != nil {
		return err
	}
	defer l.Close() // removes every source; their Removed close what they own
	say("Opened a Loop on the %q backend.", l.Poll().Backend())

	start := time.Now()
	kinds := []string{"socket", "channel", "Registration", "delay", "timer", "AfterFunc", "Post", "signal", "child", "child output", "Conn", "Dial", "TLS"}
	seen := map[string]bool{}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	shut := make(chan error, 1)
	heard := func(l *eventloop.Loop, kind, what string) {
		say("  [%v] %s: %s", time.Since(start).Round(time.Millisecond), kind, what)
		first := len(seen) < len(kinds)
		seen[kind] = true
		if first && len(seen) == len(kinds) {
			// A graceful stop: the Conn says goodbye, then the Loop stops.
			// Shutdown waits for the Loop, so not on it.
			go func() { shut <- netloop.Shutdown(ctx, l) }()
		}
	}

	// 1. A socket: its handler reads until the socket would block, as Edge
	// asks, and keeps the registration. It reads into the buffer the
	// Loop's worker lends each call (netloop's Conns read into it too).
	a, b, err := socket.Pair()
	if err != nil {
		return err
	}
	defer b.Close()
	if _, err := l.Add(a, poll.Readable, poll.Edge, closer{a, eventloop.SourceFunc(func(l *eventloop.Loop, ev poll.Event) eventloop.Action {
		buf := l.ReadBuffer(ev.Token) // valid during this call only
		for {
			n, err := a.Read(buf)
			if err != nil {
				return eventloop.Keep // ErrWouldBlock: the next edge brings us back
			}
			heard(l, "socket", fmt.Sprintf("read %q", buf[:n]))
		}
	})}, eventloop.Priority(1)); err != nil {
		return err
	}
	say("Added one end of a socket pair (priority 1: its events go first).")

	// 2. A channel: the Receiver is a source like the others.
	tx, rx := channel.New[string]()
	if _, err := l.Add(rx, poll.Readable, poll.Edge, closer{rx, eventloop.SourceFunc(func(l *eventloop.Loop, ev poll.Event) eventloop.Action {
		for v := range rx.Drain() {
			heard(l, "channel", fmt.Sprintf("received %q", v))
		}
		return eventloop.Keep
	})}); err != nil {
		return err
	}
	say("Added a channel's Receiver.")

	// 3. A Registration, made ready by another goroutine; Oneshot, so its
	// handler is called once and the source is then removed.
	worker, workerReady := poll.NewRegistration()
	if _, err := l.Add(worker, poll.Readable, poll.Oneshot, closer{worker, eventloop.SourceFunc(func(l *eventloop.Loop, ev poll.Event) eventloop.Action {
		heard(l, "Registration", "set by another goroutine; removing it")
		return eventloop.Remove
	})}); err != nil {
		return err
	}
	say("Added a user-space Registration (Oneshot).")

	// 4. Delayed readiness: the Poll's timing wheel fires it.
	alarm, alarmReady := poll.NewRegistration()
	if _, err := l.Add(alarm, poll.Readable, poll.Oneshot, closer{alarm, eventloop.SourceFunc(func(l *eventloop.Loop, ev poll.Event) eventloop.Action {
		heard(l, "delay", "fired by the timing wheel")
		return eventloop.Keep
	})}); err != nil {
		return err
	}
	if err := alarmReady.DelayReadiness(poll.Readable, 50*time.Millisecond); err != nil {
		return err
	}
	say("Added a Registration that becomes ready in 50ms.")

	// 5. A timer.Timer of the program's own: values that expire in
	// deadline order, taken by its handler.
	tm, err := timer.New[string]()
	if err != nil {
		return err
	}
	if _, err := l.Add(tm, poll.Readable, poll.Edge, closer{tm, eventloop.SourceFunc(func(l *eventloop.Loop, ev poll.Event) eventloop.Action {
		for v := range tm.Drain() {
			heard(l, "timer", fmt.Sprintf("%q expired", v))
		}
		return eventloop.Keep
	})}); err != nil {
		return err
	}
	if _, err := tm.Set(40*time.Millisecond, "a timeout set on a Timer"); err != nil {
		return err
	}
	say("Added a Timer with a timeout in 40ms.")

	// 6. A function the Loop runs after 30ms, from its timer on the same
	// timing wheel: no goroutine, no OS timer.
	if _, err := l.AfterFunc(30*time.Millisecond, func(l *eventloop.Loop) {
		heard(l, "AfterFunc", "run by the Loop's timer")
	}); err != nil {
		return err
	}
	say("Asked the Loop to run a function in 30ms (AfterFunc).")

	// 8. A signal: SIGUSR2, which the process sends itself below.
	sigs, err := signal.New(syscall.SIGUSR2)
	if err != nil {
		return err
	}
	if _, err := l.Add(sigs, poll.Readable, poll.Edge, closer{sigs, eventloop.SourceFunc(func(l *eventloop.Loop, ev poll.Event) eventloop.Action {
		for sig, ok := sigs.TryRecv(); ok; sig, ok = sigs.TryRecv() {
			heard(l, "signal", fmt.Sprintf("%v", sig))
		}
		return eventloop.Keep
	})}); err != nil {
		return err
	}
	say("Added a signal Watcher for SIGUSR2.")

	// 9. A child process: its Watcher reports the exit without reaping, so
	// the handler reaps it as its owner, and cmd.Wait returns at once. Its
	// stdout is a pipe (child.Start) with a handler of its own, which reads
	// until the pipe would block and is removed at the end of the output;
	// no goroutine copies it, so cmd.Wait waits for no pipe.
	cmd := exec.Command("/bin/sh", "-c", "echo hello from a child; exit 4")
	pipes, err := child.Start(cmd, child.Stdout)
	if err != nil {
		return err
	}
	outBuf := make([]byte, 64)
	if _, err := l.Add(pipes.Stdout, poll.Readable|poll.Hup, poll.Edge, closer{pipes.Stdout, eventloop.SourceFunc(func(l *eventloop.Loop, ev poll.Event) eventloop.Action {
		for {
			n, err := pipes.Stdout.Read(outBuf)
			if n > 0 {
				heard(l, "child output", fmt.Sprintf("read %q", outBuf[:n]))
			}
			switch {
			case errors.Is(err, child.ErrWouldBlock):
				return eventloop.Keep
			case err != nil: // io.EOF: the output is over (or the pipe failed)
				return eventloop.Remove
			}
		}
	})}); err != nil {
		_ = pipes.Close()
		return err
	}
	defer func() {
		if cmd.ProcessState == nil { // the loop stopped before the exit was handled
			_ = cmd.Process.Kill()
			_ = cmd.Wait()
		}
	}()
	exits, err := child.WatchCmd(cmd)
	if err != nil {
		return err
	}
	if _, err := l.Add(exits, poll.Readable, poll.Edge, closer{exits, eventloop.SourceFunc(func(l *eventloop.Loop, ev poll.Event) eventloop.Action {
		st, err := exits.Status()
		if err != nil {
			return eventloop.Keep // not exited yet
		}
		_ = cmd.Wait()
		heard(l, "child", fmt.Sprintf("pid %d %v; reaped by cmd.Wait", st.Pid(), st))
		return eventloop.Remove
	})}); err != nil {
		return err
	}
	say("Started `sh -c 'echo hello from a child; exit 4'` and added its stdout and a Watcher for its exit.")

	// 10. A Conn (package netloop): a buffered stream on the Loop, which
	// echoes its client, and says goodbye when the drain begins.
	client, err := addConn(l, heard)
	if err != nil {
		return err
	}
	defer client.Close()
	say("Added a netloop Conn on a socket pair; it echoes, and says goodbye at Shutdown.")

	// 11. An outbound connection, dialed from the Loop (loop_dial.go).
	stopDial, err := dialStop(l, heard, say)
	if err != nil {
		return err
	}
	defer stopDial()

	// 12. The same over TLS: crypto/tls on the Loop (loop_tls.go).
	stopTLS, err := tlsStop(l, heard, say)
	if err != nil {
		return err
	}
	defer stopTLS()

	if err := syscall.Kill(syscall.Getpid(), syscall.SIGUSR2); err != nil {
		return err
	}
	go func() {
		_, _ = b.Write([]byte("hello through the kernel"))
		_ = tx.Send("hello through a channel")
		_ = workerReady.SetReadiness(poll.Readable)
		// 7. Work posted from another goroutine runs on the loop.
		_ = l.Post(func(l *eventloop.Loop) { heard(l, "Post", "a function from another goroutine, run on the loop") })
		_, _ = client.Write([]byte("hello to a Conn"))
	}()
	say("Sent SIGUSR2 to ourselves. A goroutine writes to the socket and the Conn, sends on the channel, sets the Registration and posts a function.\n")

	if err := l.Run(ctx, nil); err != nil {
		return fmt.Errorf("loop: %w", err)
	}
	if len(seen) != len(kinds) {
		return errors.New("the loop stopped before every source was heard from")
	}
	if err := <-shut; err != nil {
		return fmt.Errorf("netloop.Shutdown: %w", err)
	}
	got, err := readToEnd(client)
	if err != nil {
		return fmt.Errorf("the Conn's client: %w", err)
	}
	say("\nnetloop.Shutdown drained the Conn and stopped the Loop: its client read %q, then the end.", got)
	st := l.Stats()
	say("\nOne Loop, %d kinds of work. Stats: %d iterations, %d handler calls, %d timeouts, %d posted functions.",
		len(kinds), st.Iterations, st.Calls, st.Timers, st.Tasks)
	return nil
}

// closer is a handler whose Removed closes the source it owns, which the
// Loop calls once the source has left it (Remove, or Close).
type closer struct {
	src io.Closer
	eventloop.SourceHandler
}

func (c closer) Removed(*eventloop.Loop, poll.Token) { _ = c.src.Close() }
