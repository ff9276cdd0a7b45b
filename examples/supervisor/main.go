//go:build unix

// Command supervisor is a small process supervisor on one Poll, with no
// goroutine of its own: it runs the commands given on its command line,
// restarts each one that exits, with back-off, forwards SIGTERM and SIGINT
// to its children and exits once they have, and reports every exit status.
//
// Everything it waits for comes back from one Poll call: a signal.Watcher
// for SIGTERM and SIGINT, a child.Watcher per running command and the
// pipes of its stdout and stderr (child.Start), and one timer.Timer whose
// values are the commands due for a restart. A command's output is passed
// on line by line, prefixed with the command's number and "out" or "err";
// no goroutine copies it, so a process a command leaves running (a daemon,
// `sleep 60 &`) cannot hold up the supervisor when the command exits.
//
// Each argument is run with /bin/sh -c; start it with exec when it is one
// program, so that the signals the supervisor forwards reach that program
// rather than the shell.
//
//	go run ./examples/supervisor 'exec sleep 2' 'exit 3'
//	go run ./examples/supervisor -max-restarts 3 -backoff 200ms 'date; exit 1'
package main

import (
	"flag"
	"fmt"
	"os"
	"time"
)

func main() {
	var cfg config
	flag.DurationVar(&cfg.backoff, "backoff", 100*time.Millisecond, "first restart delay; doubles after each quick exit")
	flag.DurationVar(&cfg.maxBackoff, "max-backoff", 5*time.Second, "largest restart delay")
	flag.DurationVar(&cfg.stable, "stable", 10*time.Second, "a command that ran this long restarts after -backoff again")
	flag.IntVar(&cfg.maxRestarts, "max-restarts", -1, "restarts per command before giving up (-1: no limit)")
	flag.Usage = func() {
		fmt.Fprintf(flag.CommandLine.Output(), "usage: %s [flags] command...\n", os.Args[0])
		flag.PrintDefaults()
	}
	flag.Parse()
	if flag.NArg() == 0 {
		flag.Usage()
		os.Exit(2)
	}
	if err := run(flag.Args(), cfg, os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "supervisor:", err)
		os.Exit(1)
	}
}
