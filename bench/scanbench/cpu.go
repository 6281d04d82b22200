package scanbench

// CPU is how busy the machine was during a measurement, in cores (CPU
// seconds per second of wall time): this process's own use, and everyone
// else's. On a machine shared with other work, a reader that is bound by
// decoding is slowed by Others, so a figure is judged beside them.
type CPU struct {
	Own    float64 `json:"own_cores"`
	Others float64 `json:"others_cores"`
	// OwnSeconds is this process's CPU time.
	OwnSeconds float64 `json:"own_cpu_seconds"`
}

// cpuSince is the CPU use from start to now.
func cpuSince(start cpuSample) CPU {
	end := sampleCPU()
	wall := end.at.Sub(start.at).Seconds()
	if wall <= 0 {
		return CPU{}
	}
	own := (end.own - start.own).Seconds()
	c := CPU{Own: own / wall, OwnSeconds: own}
	if start.haveSystem && end.haveSystem {
		c.Others = max((end.busy-start.busy).Seconds()-own, 0) / wall
	}
	return c
}
