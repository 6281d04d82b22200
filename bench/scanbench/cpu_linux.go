//go:build linux

package scanbench

import (
	"os"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// cpuSample is this process's CPU time and the machine's busy and total
// CPU time (all cores), at one moment.
type cpuSample struct {
	at         time.Time
	own        time.Duration
	busy, all  time.Duration
	haveSystem bool
}

func sampleCPU() cpuSample {
	s := cpuSample{at: time.Now()}
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) == nil {
		s.own = time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
	}
	b, err := os.ReadFile("/proc/stat")
	if err != nil {
		return s
	}
	line, _, _ := strings.Cut(string(b), "\n")
	f := strings.Fields(line)
	if len(f) < 8 || f[0] != "cpu" {
		return s
	}
	const tick = 10 * time.Millisecond // USER_HZ is 100 on Linux
	for i, v := range f[1:] {
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil || i >= 8 { // user nice system idle iowait irq softirq steal
			break
		}
		s.all += time.Duration(n) * tick
		if i != 3 && i != 4 {
			s.busy += time.Duration(n) * tick
		}
	}
	s.haveSystem = true
	return s
}
