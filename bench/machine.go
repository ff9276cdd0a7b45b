//go:build linux

package main

import (
	"bufio"
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"strings"

	"golang.org/x/sys/unix"
)

// machine describes where the run happens, for the report.
type machine struct {
	CPU     string // model name
	CPUs    []int  // the CPUs this process may run on
	Kernel  string
	Go      string
	Taskset bool   // taskset is installed
	Load    string // /proc/loadavg's first three fields at the start
}

func probeMachine() machine {
	m := machine{Go: runtime.Version(), CPU: "unknown"}
	var u unix.Utsname
	if unix.Uname(&u) == nil {
		m.Kernel = unix.ByteSliceToString(u.Sysname[:]) + " " + unix.ByteSliceToString(u.Release[:])
	}
	if f, err := os.Open("/proc/cpuinfo"); err == nil {
		sc := bufio.NewScanner(f)
		for sc.Scan() {
			if k, v, ok := strings.Cut(sc.Text(), ":"); ok && strings.TrimSpace(k) == "model name" {
				m.CPU = strings.TrimSpace(v)
				break
			}
		}
		f.Close()
	}
	var set unix.CPUSet
	if unix.SchedGetaffinity(0, &set) == nil {
		for i := range 1024 {
			if set.IsSet(i) {
				m.CPUs = append(m.CPUs, i)
			}
		}
	}
	_, err := exec.LookPath("taskset")
	m.Taskset = err == nil
	m.Load = loadAvg()
	return m
}

func loadAvg() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "unknown"
	}
	f := strings.Fields(string(b))
	if len(f) < 3 {
		return "unknown"
	}
	return strings.Join(f[:3], " ")
}

// canPin reports whether server and load generator can each have a core of
// their own.
func (m machine) canPin() bool { return m.Taskset && len(m.CPUs) >= 2 }

// serverCPU and loadCPU are the cores a pinned measurement uses.
func (m machine) serverCPU() int { return m.CPUs[0] }
func (m machine) loadCPU() int   { return m.CPUs[1] }

func (m machine) String() string {
	return fmt.Sprintf("%s, %d CPUs (%s), %s, %s", m.CPU, len(m.CPUs), cpuList(m.CPUs), m.Kernel, m.Go)
}

func cpuList(cpus []int) string {
	s := make([]string, len(cpus))
	for i, c := range cpus {
		s[i] = fmt.Sprint(c)
	}
	return strings.Join(s, ",")
}

// sharing says how busy the machine was when the run began: the cores are
// shared with whatever else runs, and the figures should be read with it.
func (m machine) sharing() string {
	return fmt.Sprintf("load average %s at the start (other work shares these cores)", m.Load)
}
