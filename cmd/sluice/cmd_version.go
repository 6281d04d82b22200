package main

import (
	"fmt"
	"runtime"
	"runtime/debug"

	"github.com/spf13/cobra"
)

func newVersionCommand() *cobra.Command {
	return &cobra.Command{
		Use:     "version",
		Short:   "Print the version of sluice",
		Example: "  sluice version",
		Args:    exactArgs(0),
		RunE: func(cmd *cobra.Command, args []string) error {
			fmt.Fprintln(cmd.OutOrStdout(), versionString())
			return nil
		},
	}
}

func versionString() string {
	v := "(devel)"
	stamped := false
	if bi, ok := debug.ReadBuildInfo(); ok {
		if bi.Main.Version != "" {
			v = bi.Main.Version
		}
		for _, s := range bi.Settings {
			if s.Key == "vcs.revision" && len(s.Value) >= 12 {
				v += " " + s.Value[:12]
				stamped = true
			}
		}
	}
	if !stamped {
		// go run stamps no VCS information.
		if rev := sourceRevision(); rev != "" {
			v += " " + rev[:12] + " (source checkout)"
		}
	}
	return fmt.Sprintf("sluice %s %s %s/%s", v, runtime.Version(), runtime.GOOS, runtime.GOARCH)
}
