// Package profile writes the Go profiles sluice's --cpuprofile and
// --memprofile flags ask for, in the format go tool pprof reads. It is a
// thin layer over runtime/pprof for one process's whole run, not a
// continuous profiler.
package profile

import (
	"os"
	"runtime"
	"runtime/pprof"
)

// StartCPU profiles the process's CPU into the file path (created or
// truncated) until stop is called; with an empty path it does nothing.
// One CPU profile runs at a time in a process.
func StartCPU(path string) (stop func(), err error) {
	if path == "" {
		return func() {}, nil
	}
	f, err := os.Create(path)
	if err != nil {
		return nil, err
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		f.Close()
		return nil, err
	}
	return func() {
		pprof.StopCPUProfile()
		f.Close()
	}, nil
}

// WriteAllocs writes the profile of every allocation the process made so
// far (go tool pprof -sample_index=alloc_space reads it) to the file path.
// It runs a collection first, as the profile counts what was allocated up
// to the last one.
func WriteAllocs(path string) error {
	runtime.GC()
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	err = pprof.Lookup("allocs").WriteTo(f, 0)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}
