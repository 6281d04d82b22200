package fanout

import (
	"bytes"
	"fmt"
	"io"
	"testing"
)

// Streams written in turns read back whole, each on its own, with the
// checksum and size of what was written to it.
func TestSpillKeepsStreamsApart(t *testing.T) {
	s, err := newSpill(3)
	if err != nil {
		t.Fatal(err)
	}
	defer s.close()
	want := make([]bytes.Buffer, 3)
	for round := range 2000 {
		for i := range 3 {
			if (round+i)%4 == 0 {
				continue // streams skip turns, as parts do
			}
			p := []byte(fmt.Sprintf("stream %d round %d;", i, round))
			for range 3 { // an IPC message arrives in several writes
				if _, err := s.writer(i).Write(p); err != nil {
					t.Fatal(err)
				}
				want[i].Write(p)
			}
		}
	}
	for i := range 3 {
		r, err := s.reader(i)
		if err != nil {
			t.Fatal(err)
		}
		got, err := io.ReadAll(r)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got, want[i].Bytes()) || s.size[i] != int64(len(got)) || s.crc[i].Sum32() != checksum(got) {
			t.Fatalf("stream %d: read back %d bytes (size %d), wrote %d", i, len(got), s.size[i], want[i].Len())
		}
		if len(s.segs[i]) > 2000 {
			t.Fatalf("stream %d: %d segments for 2000 turns: consecutive writes were not joined", i, len(s.segs[i]))
		}
	}
}
