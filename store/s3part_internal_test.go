package store

import "testing"

func TestChoosePartSize(t *testing.T) {
	const mib = 1 << 20
	for _, c := range []struct {
		asked, size, want int64
	}{
		{0, 0, DefaultPartSize},         // unknown size: the default
		{0, 100 * mib, DefaultPartSize}, // fits in 10,000 default parts
		{1 * mib, 0, minPartSize},       // below S3's minimum
		{0, 100 << 30, 11 * mib},        // 100 GiB: 10.24 MiB parts, whole MiB up
		{64 * mib, 100 << 30, 64 * mib}, // asked for larger: kept
		{0, 5 << 40, 525 * mib},         // 5 TiB, S3's largest object
		{8 << 30, 0, maxPartSize},       // above S3's maximum
	} {
		got := choosePartSize(c.asked, c.size)
		if got != c.want {
			t.Errorf("choosePartSize(%d, %d) = %d, want %d", c.asked, c.size, got, c.want)
		}
		if c.size > 0 && got*maxParts < c.size {
			t.Errorf("choosePartSize(%d, %d) = %d: the object needs more than %d parts", c.asked, c.size, got, maxParts)
		}
	}
}
