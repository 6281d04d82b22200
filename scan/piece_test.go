package scan

import "testing"

// TestPieces: every row group read is in exactly one piece, pieces are
// contiguous ranges of one file in dataset order, a small file is one
// piece and a large one is cut into pieces of size to twice size.
func TestPieces(t *testing.T) {
	var plan []RowGroup
	plan = append(plan, RowGroup{File: 0, Index: 0, Bytes: 25}) // small: one piece
	for i := range 40 {
		if i%7 == 3 {
			continue // pruned by statistics
		}
		plan = append(plan, RowGroup{File: 2, Index: i, Bytes: int64(5 + i%4)})
	}
	plan = append(plan, RowGroup{File: 3, Index: 0, Bytes: 100}, RowGroup{File: 3, Index: 1, Bytes: 1})
	const size = 30
	got := Pieces(plan, size)

	next := 0 // the next plan entry a piece must start at
	bytesOf := map[int]int64{}
	for i, p := range got {
		if p.Lo >= p.Hi {
			t.Fatalf("piece %d %+v: empty range", i, p)
		}
		var b int64
		for next < len(plan) && plan[next].File == p.File && plan[next].Index < p.Hi {
			if plan[next].Index < p.Lo {
				t.Fatalf("piece %d %+v leaves out row group %+v", i, p, plan[next])
			}
			b += plan[next].Bytes
			next++
		}
		if b == 0 {
			t.Fatalf("piece %d %+v holds no row group read", i, p)
		}
		if i > 0 && got[i-1].File == p.File && got[i-1].Hi > p.Lo {
			t.Fatalf("pieces %+v and %+v overlap", got[i-1], p)
		}
		bytesOf[i] = b
	}
	if next != len(plan) {
		t.Fatalf("pieces %+v leave out %+v", got, plan[next:])
	}
	var file2 int
	for i, p := range got {
		if p.File == 2 {
			file2++
			// A share of the file, give or take a row group (8 bytes).
			if b := bytesOf[i]; b < size-8 || b >= 2*size+8 {
				t.Errorf("piece %+v: %d bytes, want about %d to %d", p, b, size, 2*size)
			}
		}
	}
	if file2 < 5 {
		t.Errorf("a file of about 8 pieces' worth cut into %d", file2)
	}
	if got[0] != (Piece{0, 0, 1}) {
		t.Errorf("small file: %+v, want one piece", got[0])
	}
	// One row group is never split, however large.
	if last := got[len(got)-2:]; last[0].File != 3 || last[1].File != 3 || last[0] != (Piece{3, 0, 1}) {
		t.Errorf("file 3 (a row group of 100 bytes, then 1): %+v", last)
	}
}
