package spell

import "testing"

func TestCount(t *testing.T) {
	for _, c := range []struct {
		got, want string
	}{
		{Count(0, "object"), "0 objects"},
		{Count(1, "object"), "1 object"},
		{Count(int64(2), "byte"), "2 bytes"},
		{Count(1, "prefix"), "1 prefix"},
		{Count(3, "prefix"), "3 prefixes"},
	} {
		if c.got != c.want {
			t.Errorf("got %q, want %q", c.got, c.want)
		}
	}
}

func TestThousands(t *testing.T) {
	for n, want := range map[int64]string{
		0: "0", 999: "999", 1000: "1,000", 123456: "123,456",
		1_000_000: "1,000,000", 12_345_678_901: "12,345,678,901",
	} {
		if got := Thousands(n); got != want {
			t.Errorf("Thousands(%d) = %q, want %q", n, got, want)
		}
	}
}
