package collect

import "testing"

// FuzzUnmarshalPos: a client reads any app_metadata as a position or an
// error, and a position round-trips.
func FuzzUnmarshalPos(f *testing.F) {
	for _, s := range []string{`{"part":1,"file":2,"key":"k","row_group":3,"batch":4,"row":5,"last":true}`, `{}`, `{"file":"x"}`, `1`, ``} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		p, err := UnmarshalPos(b)
		if err != nil {
			return
		}
		again, err := UnmarshalPos(MarshalPos(p))
		if err != nil || again != p {
			t.Fatalf("%q: %+v read back as %+v, %v", b, p, again, err)
		}
	})
}
