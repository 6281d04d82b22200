// Package spell writes counts in the words sluice's summaries use: "1
// object", "2 objects", "3 prefixes", "1,000,000". It knows the few
// nouns those summaries count, not English at large.
package spell

import (
	"strconv"
	"strings"
)

// Count is n followed by noun, made plural unless n is 1: "1 object",
// "2 objects", "3 prefixes" (a noun ending in x takes es).
func Count[N int | int64](n N, noun string) string {
	s := strconv.FormatInt(int64(n), 10) + " " + noun
	switch {
	case n == 1:
		return s
	case strings.HasSuffix(noun, "x"):
		return s + "es"
	}
	return s + "s"
}

// Thousands writes n (not negative) with a comma between groups of
// three digits: 1,000,000.
func Thousands(n int64) string {
	s := strconv.FormatInt(n, 10)
	for i := len(s) - 3; i > 0; i -= 3 {
		s = s[:i] + "," + s[i:]
	}
	return s
}
