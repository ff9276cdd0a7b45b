//go:build linux

package main

// Child processes: the runner re-executes its own binary in a role, and
// reads what the child reports as one JSON object on its standard output.

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"time"
)

// runRole is the entry point of a child process.
func runRole(role string, args []string) error {
	switch role {
	case "micro":
		return microMain(args)
	case "server":
		return serverMain(args)
	case "load":
		return loadMain(args)
	case "handshake":
		return handshakeMain(args)
	}
	return fmt.Errorf("unknown role %q", role)
}

// report writes a child's result for the runner.
func report(v any) error { return json.NewEncoder(os.Stdout).Encode(v) }

// pinned prefixes a command with taskset when cpu >= 0.
func pinned(cpu int, name string, args ...string) *exec.Cmd {
	if cpu < 0 {
		return exec.Command(name, args...)
	}
	return exec.Command("taskset", append([]string{"-c", strconv.Itoa(cpu), name}, args...)...)
}

// child runs this binary in role with args, optionally pinned, with env
// added to its environment, and decodes its JSON result into out. timeout
// bounds the whole run.
func (r *Runner) child(cpu int, env []string, timeout time.Duration, out any, role string, args ...string) error {
	cmd := pinned(cpu, r.self, append([]string{"-role", role, "--"}, args...)...)
	if len(env) > 0 {
		cmd.Env = append(os.Environ(), env...)
	}
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Start(); err != nil {
		return err
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err := <-done:
		if err != nil {
			return fmt.Errorf("%s %s: %v: %s", role, strings.Join(args, " "), err, lastLines(stderr.String(), 5))
		}
	case <-time.After(timeout):
		_ = cmd.Process.Kill()
		<-done
		return fmt.Errorf("%s %s: no result after %v: %s", role, strings.Join(args, " "), timeout, lastLines(stderr.String(), 5))
	}
	if err := json.Unmarshal(stdout.Bytes(), out); err != nil {
		return fmt.Errorf("%s %s: result %q: %v", role, strings.Join(args, " "), stdout.String(), err)
	}
	return nil
}

func lastLines(s string, n int) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, " | ")
}

// clockTick is the unit of /proc/PID/stat's CPU times: USER_HZ, 100 on
// every Linux architecture Go supports.
const clockTick = 10 * time.Millisecond

// procCPU returns a process's CPU time so far, user plus system, of all its
// threads (fields 14 and 15 of /proc/PID/stat, in clock ticks).
func procCPU(pid int) (time.Duration, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, err
	}
	return parseStatCPU(string(b))
}

// parseStatCPU reads utime+stime from the text of /proc/PID/stat. The
// second field, the command name, is in parentheses and may hold spaces
// and parentheses itself, so the fields are counted from the last ')'.
func parseStatCPU(stat string) (time.Duration, error) {
	i := strings.LastIndexByte(stat, ')')
	if i < 0 {
		return 0, fmt.Errorf("malformed /proc stat %q", stat)
	}
	f := strings.Fields(stat[i+1:])
	// f[0] is field 3 (state); utime and stime are fields 14 and 15.
	if len(f) < 13 {
		return 0, fmt.Errorf("malformed /proc stat %q", stat)
	}
	u, err1 := strconv.ParseUint(f[11], 10, 64)
	s, err2 := strconv.ParseUint(f[12], 10, 64)
	if err1 != nil || err2 != nil {
		return 0, fmt.Errorf("malformed /proc stat %q", stat)
	}
	return time.Duration(u+s) * clockTick, nil
}

// procSwitches returns a process's context switches so far, voluntary and
// not, summed over its threads (/proc/PID/task/*/status).
func procSwitches(pid int) (uint64, error) {
	tasks, err := os.ReadDir(fmt.Sprintf("/proc/%d/task", pid))
	if err != nil {
		return 0, err
	}
	var total uint64
	for _, t := range tasks {
		b, err := os.ReadFile(fmt.Sprintf("/proc/%d/task/%s/status", pid, t.Name()))
		if err != nil {
			continue // a thread that exited meanwhile
		}
		for _, line := range strings.Split(string(b), "\n") {
			if k, v, ok := strings.Cut(line, ":"); ok && strings.HasSuffix(k, "ctxt_switches") {
				n, _ := strconv.ParseUint(strings.TrimSpace(v), 10, 64)
				total += n
			}
		}
	}
	return total, nil
}
