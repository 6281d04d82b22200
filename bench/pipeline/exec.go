package main

import (
	"fmt"
	"os/exec"
	"strings"

	"github.com/sluice-data/sluice/internal/measure"
)

// execOverhead measures what running a stage as a program costs (the exec
// stage, issue 31): queries A and B fused, each with a select of the
// columns it reads right after its scan, once as sluice's own select and
// once as exec -- sluice select (the program a child that gets every batch
// and hands every batch back, through shared memory from the batch after
// the one it started reading in). The two forms take turns round by
// round; medians of runs, and their ratio.
func execOverhead(sluiceBin string, paths map[string]string, runs int) error {
	fmt.Printf("exec overhead: %d runs each, medians; select right after the scan, sluice's own against exec -- sluice select\n", runs)
	fmt.Printf("%-6s %-8s %10s %10s %8s %12s %12s\n", "query", "form", "wall s", "cpu s", "max RSS", "wall/own", "cpu/own")
	for _, q := range queries {
		texts := make([]string, len(q.stages))
		for i, s := range q.stages {
			var words []string
			for _, w := range s {
				words = append(words, strings.NewReplacer("{taxi}", paths["taxi"], "{lineitem}", paths["lineitem"]).Replace(w))
			}
			texts[i] = text(words)
		}
		cols := ""
		for i, w := range q.stages[0] {
			if w == "--columns" {
				cols = q.stages[0][i+1]
			}
		}
		with := func(stage string) []string {
			return []string{"run", strings.Join(append([]string{texts[0], stage}, texts[1:]...), " | ")}
		}
		forms := []struct {
			name string
			args []string
		}{
			{"own", with("select " + cols)},
			{"exec", with("exec -- " + shellQuote(sluiceBin) + " select " + cols)},
		}
		samples := make([][]sample, len(forms))
		outs := make([]string, len(forms))
		for i, f := range forms { // warm up, and check they agree
			_, out, err := measureRun(sluiceBin, f.args)
			if err != nil {
				return fmt.Errorf("query %s %s: %w", q.name, f.name, err)
			}
			outs[i] = out
		}
		if outs[0] != outs[1] {
			return fmt.Errorf("query %s: own select and exec -- sluice select print different tables:\n%s\n%s", q.name, outs[0], outs[1])
		}
		for r := range runs {
			for k := range forms {
				i := (r + k) % len(forms)
				s, _, err := measureRun(sluiceBin, forms[i].args)
				if err != nil {
					return err
				}
				samples[i] = append(samples[i], s)
			}
		}
		own := median(samples[0])
		for i, f := range forms {
			m := median(samples[i])
			fmt.Printf("%-6s %-8s %10.3f %10.3f %7.0fM %12.2f %12.2f   (round by round: wall %.2f)\n", q.name, f.name, m.Wall, m.CPU, m.RSS/(1<<20),
				m.Wall/own.Wall, m.CPU/own.CPU, pairedRatio(samples[i], samples[0]))
		}
		fmt.Printf("%-6s command: sluice run %s\n", q.name, forms[1].args[1])
	}
	return nil
}

func measureRun(bin string, args []string) (sample, string, error) {
	return measure.Run(exec.Command(bin, args...))
}
