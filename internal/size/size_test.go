package size

import "testing"

func TestIEC(t *testing.T) {
	for _, c := range []struct {
		n    int64
		want string
	}{
		{0, "0 B"},
		{1023, "1023 B"},
		{1024, "1.0 KiB"},
		{1536, "1.5 KiB"},
		{1<<20 - 1, "1024.0 KiB"}, // rounds within the unit it reached
		{1 << 20, "1.0 MiB"},
		{5<<30 + 1<<29, "5.5 GiB"},
		{1 << 40, "1.0 TiB"},
		{3 << 50, "3.0 PiB"},
		{1 << 62, "4.0 EiB"},
	} {
		if got := IEC(c.n); got != c.want {
			t.Errorf("IEC(%d) = %q, want %q", c.n, got, c.want)
		}
	}
}
