// Package buildinfo says which build of sluice is running: the module
// version and commit the Go toolchain stamped into the binary, or, for a
// build that carries no stamp (go run, go test), the commit checked out
// where the source was compiled from, read from .git directly.
//
// It reads; it never runs git, and it is not a general git library: it
// knows HEAD, a branch ref, packed-refs and a worktree's .git file, enough
// to name a commit.
package buildinfo

import (
	"fmt"
	"runtime"
	"runtime/debug"
)

// Version is the line sluice version prints, such as
// "sluice v1.2.0 0123456789ab go1.26.8 linux/amd64": the module version
// ((devel) when built from a checkout), the first 12 digits of the commit
// (followed by "(source checkout)" when read from .git rather than
// stamped), the Go version, and the platform.
func Version() string {
	v := Module()
	stamped := false
	if bi, ok := debug.ReadBuildInfo(); ok {
		for _, s := range bi.Settings {
			if s.Key == "vcs.revision" && len(s.Value) >= 12 {
				v += " " + s.Value[:12]
				stamped = true
			}
		}
	}
	if !stamped {
		// go run stamps no VCS information.
		if rev := SourceRevision(); rev != "" {
			v += " " + rev[:12] + " (source checkout)"
		}
	}
	return fmt.Sprintf("sluice %s %s %s/%s", v, runtime.Version(), runtime.GOOS, runtime.GOARCH)
}

// Module is the module version the binary was built from, such as
// v1.2.0, or (devel) when built from a checkout.
func Module() string {
	if bi, ok := debug.ReadBuildInfo(); ok && bi.Main.Version != "" {
		return bi.Main.Version
	}
	return "(devel)"
}
