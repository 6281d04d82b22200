package bench

import "testing"

func TestParseSize(t *testing.T) {
	for in, want := range map[string]int64{
		"1MiB": 1 << 20, "16MiB": 16 << 20, "1GiB": 1 << 30, "500KB": 500_000, "4096": 4096,
		"1.5MiB": 3 << 19, "16mib": 16 << 20, " 2 KiB ": 2048, "0": 0, "3B": 3, "1TB": 1e12,
	} {
		got, err := ParseSize(in)
		if err != nil || got != want {
			t.Errorf("ParseSize(%q) = %d, %v; want %d", in, got, err, want)
		}
	}
	for _, in := range []string{"", "-1MiB", "MiB", "16M", "1.5B", "abc", "1e30TiB", "NaN", "16 MiBs"} {
		if n, err := ParseSize(in); err == nil {
			t.Errorf("ParseSize(%q) = %d, want an error", in, n)
		}
	}
}

func TestFormatSize(t *testing.T) {
	for n, want := range map[int64]string{16 << 20: "16MiB", 1536 << 10: "1536KiB", 100: "100B", 1 << 30: "1GiB", 1000: "1000B"} {
		if got := FormatSize(n); got != want {
			t.Errorf("FormatSize(%d) = %q, want %q", n, got, want)
		}
		if back, err := ParseSize(FormatSize(n)); err != nil || back != n {
			t.Errorf("ParseSize(FormatSize(%d)) = %d, %v", n, back, err)
		}
	}
}

func FuzzParseSize(f *testing.F) {
	for _, s := range []string{"16MiB", "1.5GiB", "500KB", "-1", "1e3", "0x10", "inf"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		n, err := ParseSize(s)
		if err == nil && n < 0 {
			t.Fatalf("ParseSize(%q) = %d: negative without an error", s, n)
		}
	})
}
