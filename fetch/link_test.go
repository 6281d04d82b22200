package fetch

import (
	"testing"
	"time"
)

// The in-flight controller against a modelled link whose throughput is
// min(limit x per-stream rate, link) with requests of first-byte latency
// plus transfer: it must climb to what the link needs, stop there, and not
// move when nobody waits for a slot.
func TestLimitController(t *testing.T) {
	tests := []struct {
		name            string
		perStream, link float64 // bytes per second
		part            float64 // bytes per request
		busy            bool
		wantLo, wantHi  int // the final limit
		wantMaxAtLeast  int
		wantMaxAtMost   int
	}{
		{"stream-bound: climbs to link / stream", 10 * MiB, 400 * MiB, 8 * MiB, true, 40, 64, 40, 64},
		{"link-bound from the start: stays", 90 * MiB, 1000 * MiB, 8 * MiB, true, 16, 16, 16, 20},
		{"small requests: latency-bound, the BDP floor takes it to the cap", 90 * MiB, 2000 * MiB, 64 * KiB, true, 64, 64, 64, 64},
		{"no one waits for a slot: no change", 10 * MiB, 400 * MiB, 8 * MiB, false, 16, 16, 16, 16},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			l := newLinkModel(Options{}.withDefaults())
			l.addPart(int64(tt.part))
			ttfb := l.prior.ttfb50.Seconds()
			now := time.Unix(0, 0)
			l.winStart = now
			hi := 0
			for range 1000 { // 10 s in 10ms ticks
				limit := l.slots.getLimit()
				perRequest := tt.part / (ttfb + tt.part/tt.perStream) // a stream's share with the first byte
				rate := min(float64(limit)*perRequest, tt.link)
				now = now.Add(10 * time.Millisecond)
				l.addDelivered(int64(rate / 100))
				l.tick(now, tt.busy)
				hi = max(hi, l.slots.getLimit())
			}
			got := l.slots.getLimit()
			if got < tt.wantLo || got > tt.wantHi || hi < tt.wantMaxAtLeast || hi > tt.wantMaxAtMost {
				t.Errorf("final limit %d (want %d..%d), highest %d (want %d..%d)", got, tt.wantLo, tt.wantHi, hi, tt.wantMaxAtLeast, tt.wantMaxAtMost)
			}
		})
	}
}
