// Package intlist reads comma-separated lists of whole numbers (1,2,4):
// the spelling of every setting that sweeps a count, such as a benchmark's
// concurrencies or worker counts.
package intlist

import (
	"strconv"
	"strings"
)

// Parse reads s, each number at least least; spaces around a number are
// allowed. An empty list, an empty entry, or a number below least is not
// a list (ok is false): callers name the setting in their own error.
func Parse(s string, least int) (ns []int, ok bool) {
	for _, f := range strings.Split(s, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || n < least {
			return nil, false
		}
		ns = append(ns, n)
	}
	return ns, true
}
