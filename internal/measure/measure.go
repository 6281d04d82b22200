// Package measure times child processes for the benchmark programs: the
// wall time, CPU time, peak resident set, faults and context switches of
// a process, and medians of several runs.
package measure

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"slices"
	"strings"
	"syscall"
	"time"
)

// Sample is one process's (or one pipeline's) figures: seconds and bytes.
type Sample struct{ Wall, CPU, Sys, RSS, Faults, Switches float64 }

// Run runs cmd to its end and returns its figures and standard output; an
// error says the command and the first line of its standard error.
func Run(cmd *exec.Cmd) (Sample, string, error) {
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	start := time.Now()
	err := cmd.Run()
	wall := time.Since(start).Seconds()
	if err != nil {
		return Sample{}, "", fmt.Errorf("%s: %v: %s", strings.Join(cmd.Args, " "), err, FirstLine(errb.String()))
	}
	s := Usage(cmd.ProcessState)
	s.Wall = wall
	return s, out.String(), nil
}

// Usage is what the system counted of an ended process (no wall time).
func Usage(ps *os.ProcessState) Sample {
	var s Sample
	if ru, ok := ps.SysUsage().(*syscall.Rusage); ok {
		s.CPU = time.Duration(ru.Utime.Nano() + ru.Stime.Nano()).Seconds()
		s.Sys = time.Duration(ru.Stime.Nano()).Seconds()
		s.RSS = float64(ru.Maxrss) * 1024
		s.Faults = float64(ru.Minflt + ru.Majflt)
		s.Switches = float64(ru.Nvcsw + ru.Nivcsw)
	}
	return s
}

// Median is each figure's median over s, taken figure by figure.
func Median(s []Sample) Sample {
	pick := func(f func(Sample) float64) float64 {
		v := make([]float64, len(s))
		for i, x := range s {
			v[i] = f(x)
		}
		slices.Sort(v)
		return v[len(v)/2]
	}
	return Sample{
		Wall:     pick(func(x Sample) float64 { return x.Wall }),
		CPU:      pick(func(x Sample) float64 { return x.CPU }),
		Sys:      pick(func(x Sample) float64 { return x.Sys }),
		RSS:      pick(func(x Sample) float64 { return x.RSS }),
		Faults:   pick(func(x Sample) float64 { return x.Faults }),
		Switches: pick(func(x Sample) float64 { return x.Switches }),
	}
}

// FirstLine is s up to its first newline, trimmed.
func FirstLine(s string) string {
	s = strings.TrimSpace(s)
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		return s[:i]
	}
	return s
}
