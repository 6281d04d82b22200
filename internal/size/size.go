// Package size reads and prints byte counts (16MiB, 1GiB, 500KB): one
// spelling for every flag and plan that takes a size.
package size

import (
	"fmt"
	"math"
	"strconv"
	"strings"
)

// units are tried longest first so "MiB" is not read as "B". The same
// units as sim's rates: binary with an i, decimal without.
var units = []struct {
	name string
	mult float64
}{
	{"TiB", 1 << 40}, {"GiB", 1 << 30}, {"MiB", 1 << 20}, {"KiB", 1 << 10},
	{"TB", 1e12}, {"GB", 1e9}, {"MB", 1e6}, {"KB", 1e3}, {"B", 1},
}

// Parse reads a byte count such as 16MiB, 1GiB, 500KB, 1.5MiB or 4096.
// Units (case-insensitive) are B, KiB, MiB, GiB, TiB (powers of 1024) and
// KB, MB, GB, TB (powers of 1000); a bare number is bytes. Negative,
// fractional-byte and overflowing sizes are errors; zero parses (callers
// that need a positive size say so).
func Parse(s string) (int64, error) {
	v := strings.TrimSpace(s)
	bad := func(why string) error { return fmt.Errorf("bad size %q: %s", s, why) }
	if v == "" {
		return 0, bad("empty")
	}
	mult := 1.0
	for _, u := range units {
		if len(v) > len(u.name) && strings.EqualFold(v[len(v)-len(u.name):], u.name) {
			v, mult = strings.TrimSpace(v[:len(v)-len(u.name)]), u.mult
			break
		}
	}
	f, err := strconv.ParseFloat(v, 64)
	if err != nil || math.IsNaN(f) {
		return 0, bad("want a number with an optional unit, such as 16MiB (units B, KiB, MiB, GiB, TiB, KB, MB, GB, TB)")
	}
	if f < 0 {
		return 0, bad("must not be negative")
	}
	n := f * mult
	if n >= math.MaxInt64 {
		return 0, bad("too large")
	}
	if n != math.Trunc(n) {
		return 0, bad("not a whole number of bytes")
	}
	return int64(n), nil
}

// Format prints n in the largest binary unit that divides it exactly
// (16MiB, 1536KiB, 100B), so what it prints reads back with Parse.
func Format(n int64) string {
	for _, u := range units[:4] {
		m := int64(u.mult)
		if n >= m && n%m == 0 {
			return strconv.FormatInt(n/m, 10) + u.name
		}
	}
	return strconv.FormatInt(n, 10) + "B"
}

// Human prints n approximately, for reports (12.5MiB).
func Human(n int64) string {
	for _, u := range units[:4] {
		if float64(n) >= u.mult {
			if int64(u.mult) > 0 && n%int64(u.mult) == 0 {
				return strconv.FormatInt(n/int64(u.mult), 10) + u.name
			}
			return strconv.FormatFloat(float64(n)/u.mult, 'f', 1, 64) + u.name
		}
	}
	return strconv.FormatInt(n, 10) + "B"
}

// IEC prints n for a person reading a summary: bytes below 1 KiB (512 B),
// else one decimal in the largest binary unit it reaches, with a space
// (1.5 MiB, 2.0 GiB). Unlike Format it rounds, and does not read back.
func IEC(n int64) string {
	const unit = 1024
	if n < unit {
		return fmt.Sprintf("%d B", n)
	}
	div, exp := int64(unit), 0
	for m := n / unit; m >= unit; m /= unit {
		div *= unit
		exp++
	}
	return fmt.Sprintf("%.1f %ciB", float64(n)/float64(div), "KMGTPE"[exp])
}
