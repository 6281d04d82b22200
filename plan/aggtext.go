package plan

import (
	"regexp"
	"strings"
)

// countDistinctCall finds count(distinct ...).
var countDistinctCall = regexp.MustCompile(`(?i)\bcount\s*\(\s*distinct\s+`)

// AggText is agg-by's aggregate list as the expression language reads
// it: count(distinct x) written as count_distinct(x), padded to the same
// number of characters, so the language needs no distinct keyword and
// error positions still point at what was written.
func AggText(input string) string {
	return countDistinctCall.ReplaceAllStringFunc(input, func(m string) string {
		return "count_distinct(" + strings.Repeat(" ", len(m)-len("count_distinct("))
	})
}
