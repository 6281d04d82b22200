package cli

import (
	"fmt"

	"github.com/spf13/cobra"

	"github.com/sluice-data/sluice/internal/buildinfo"
)

func newVersionCommand() *cobra.Command {
	return &cobra.Command{
		Use:     "version",
		Short:   "Print the version of sluice",
		Example: "  sluice version",
		Args:    exactArgs(0),
		RunE: func(cmd *cobra.Command, args []string) error {
			fmt.Fprintln(cmd.OutOrStdout(), buildinfo.Version())
			return nil
		},
	}
}
