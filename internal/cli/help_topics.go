package cli

import "github.com/spf13/cobra"

// Help topics: the mechanics several commands share, told once (sluice
// help pipes, urls, sim) instead of in every command's help.
func helpTopics() []*cobra.Command {
	return []*cobra.Command{
		benchFiguresTopic(),
		fanoutTopic(),
		{
			Use:   "pipes",
			Short: "How stages connect: piped processes or one fused process",
			Long:  helpText("pipes"),
		},
		{
			Use:   "urls",
			Short: "Where data lives: s3://, gs://, az://, file:// and paths, https://, mem://, globs and prefixes",
			Long:  helpText("urls"),
		},
		{
			Use:   "sim",
			Short: "Model a remote link with --sim: latency, bandwidth, faults, request rates",
			Long:  helpText("sim"),
		},
	}
}
