package bench

import "github.com/sluice-data/sluice/internal/size"

// ParseSize reads a byte count such as 16MiB, 1GiB, 500KB, 1.5MiB or 4096.
// Units (case-insensitive) are B, KiB, MiB, GiB, TiB (powers of 1024) and
// KB, MB, GB, TB (powers of 1000); a bare number is bytes. Negative,
// fractional-byte and overflowing sizes are errors; zero parses (callers
// that need a positive size say so).
func ParseSize(s string) (int64, error) { return size.Parse(s) }

// FormatSize prints n in the largest binary unit that divides it exactly
// (16MiB, 1536KiB, 100B), so what it prints reads back with ParseSize.
func FormatSize(n int64) string { return size.Format(n) }

// humanSize prints n approximately, for reports (12.5MiB).
func humanSize(n int64) string { return size.Human(n) }
