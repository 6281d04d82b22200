package format

import (
	"testing"
)

func TestSniff(t *testing.T) {
	for _, c := range []struct {
		head, name string
		want       Format
	}{
		{"PAR1\x15\x04", "x", Parquet},
		{"ARROW1\x00\x00\xff\xff\xff\xff", "x.csv", IPCFile},
		{"\xff\xff\xff\xff\x10\x00\x00\x00", "data", IPCStream},
		{"a,b\n1,2\n", "data", CSV},
		{"{\"a\":1}\n", "data", JSONLines},
		{"  {\"a\":1}\n", "data", JSONLines},
		{"{\"a\":1}\n", "x.csv", CSV},
		{"a,b\n1,2\n", "x.ndjson", JSONLines},
		{"name,city\nZoë,Köln\n", "", CSV},
		{"a,b\n1,\xc3", "", CSV}, // a rune cut by the end of the sample
		{"\x00\x01\x02\x03", "x.csv", Unknown},
		{"a,b\n\xff\xfe,2\n", "", Unknown},
		{"", "x.csv", Unknown},
	} {
		if got := Sniff([]byte(c.head), c.name); got != c.want {
			t.Errorf("Sniff(%q, %q) = %v, want %v", c.head, c.name, got, c.want)
		}
	}
}

// FuzzSniff: any bytes are some format or Unknown, never a panic, and a
// binary format is told by content whatever the name says.
func FuzzSniff(f *testing.F) {
	f.Add([]byte("PAR1"), "x.csv")
	f.Add([]byte("a,b\n1,2\n"), "x")
	f.Add([]byte("{\"a\":1}"), "x.jsonl")
	f.Fuzz(func(t *testing.T, head []byte, name string) {
		got := Sniff(head, name)
		if got == Parquet && string(head[:4]) != "PAR1" {
			t.Fatalf("%q: Parquet without its magic", head)
		}
		if (got == CSV || got == JSONLines) && !isText(head) {
			t.Fatalf("%q: text that is not", head)
		}
	})
}
