package cli

import (
	"embed"
	"strings"

	"github.com/sluice-data/sluice/plan"
)

// The commands' help (Long and Example) is prose kept in help/NAME.txt
// and help/NAME.examples.txt, so that it reads and diffs as text.
//
//go:embed help/*.txt
var helpFiles embed.FS

// helpText is help/NAME.txt, its {{output}} and {{executors}} replaced by
// those files and {{stages}} and {{record-fields}} by the lists they name.
func helpText(name string) string {
	b, err := helpFiles.ReadFile("help/" + name + ".txt")
	if err != nil {
		panic("no help for " + name) // a file left out of the build; TestEveryCommandHasHelp
	}
	text := strings.TrimSuffix(string(b), "\n")
	if !strings.Contains(text, "{{") {
		return text
	}
	return strings.NewReplacer(
		"{{output}}", helpText("output"),
		"{{executors}}", helpText("executors"),
		"{{stages}}", fill("Stages: "+plan.Names()+".", 76),
		"{{record-fields}}", recordFieldsHelp(),
	).Replace(text)
}
