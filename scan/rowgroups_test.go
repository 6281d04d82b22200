package scan

import (
	"context"
	"maps"
	"slices"
	"testing"

	"github.com/sluice-data/sluice/gen"
)

// groupID names a row group by its place in the dataset.
type groupID struct{ file, rg int }

// scanGroups scans a dataset and sums each row group on its own,
// returning the sums and every batch position, in dataset order.
func scanGroups(t *testing.T, ds *Dataset) (map[groupID]sums, []Position) {
	t.Helper()
	s := ds.Scan(context.Background())
	defer s.Close()
	got, err := drain(s)
	if err != nil {
		t.Fatalf("scan: %v", err)
	}
	defer releaseBatches(got)
	summers := map[groupID]*summer{}
	var pos []Position
	for _, b := range got {
		id := groupID{b.Pos.File, b.Pos.RowGroup}
		if summers[id] == nil {
			summers[id] = newSummer()
		}
		summers[id].add(b.RecordBatch)
		pos = append(pos, b.Pos)
	}
	out := map[groupID]sums{}
	for id, s := range summers {
		out[id] = s.sums()
	}
	return out, pos
}

// TestRowGroupsRange: Options.RowGroups reads exactly the row groups it
// keeps, numbered as in a scan of the whole dataset, with pruning by
// statistics still applied; asking for row groups a file does not have
// reads nothing.
func TestRowGroupsRange(t *testing.T) {
	ctx := context.Background()
	st := memStore(t.Name())
	if _, err := gen.Taxi(ctx, st, "taxi/", gen.Options{Rows: 12_000, Files: 2, RowGroupRows: 1000, Seed: 5}); err != nil {
		t.Fatal(err)
	}
	const key = "taxi/part-00001.parquet"
	inRange := func(lo, hi int) func(string, int) bool {
		return func(k string, rg int) bool { return k == key && rg >= lo && rg < hi }
	}
	for _, filter := range []string{"", "passenger_count > 2"} {
		t.Run("filter="+filter, func(t *testing.T) {
			all, err := Open(ctx, st, "taxi/", Options{Filter: filter, BatchRows: 300})
			if err != nil {
				t.Fatal(err)
			}
			if f := all.Files(); len(f) != 2 || f[1].Key != key || f[1].RowGroups != 6 {
				t.Fatalf("generated files %+v, want 2 of 6 row groups", f)
			}
			wantSums, allPos := scanGroups(t, all)
			var wantPos []Position
			for _, p := range allPos {
				if p.File == 1 && p.RowGroup >= 2 && p.RowGroup < 5 {
					wantPos = append(wantPos, p)
				}
			}

			mem := checked(t)
			ds, err := Open(ctx, st, "taxi/", Options{Filter: filter, BatchRows: 300, Mem: mem, RowGroups: inRange(2, 5)})
			if err != nil {
				t.Fatal(err)
			}
			var planned []RowGroup
			for _, g := range all.Plan() {
				if g.File == 1 && g.Index >= 2 && g.Index < 5 {
					planned = append(planned, g)
				}
			}
			if got := ds.Plan(); len(got) != 3 || !slices.Equal(got, planned) {
				t.Fatalf("Plan %+v, want %+v", got, planned)
			}
			gotSums, gotPos := scanGroups(t, ds)
			if ids := slices.Collect(maps.Keys(gotSums)); len(ids) != 3 {
				t.Fatalf("read row groups %v, want file 1's 2, 3 and 4", ids)
			}
			for id, s := range gotSums {
				if id.file != 1 || id.rg < 2 || id.rg >= 5 {
					t.Fatalf("read row group %d of file %d, outside the range", id.rg, id.file)
				}
				if w := wantSums[id]; s.String() != w.String() {
					t.Errorf("row group %v: %v, whole scan %v", id, s, w)
				}
			}
			if !slices.Equal(gotPos, wantPos) {
				t.Errorf("positions %+v\nwant %+v", gotPos, wantPos)
			}
		})
	}

	// Statistics pruning applies within the range: a filter no row
	// group's statistics allow leaves nothing to read, counted as pruned.
	ds, err := Open(ctx, st, "taxi/", Options{Filter: "passenger_count > 1000", RowGroups: inRange(0, 4)})
	if err != nil {
		t.Fatal(err)
	}
	if ds.RowGroups() != 0 {
		t.Errorf("filter excluding every row group: %d row groups to read", ds.RowGroups())
	}
	s := ds.Scan(ctx)
	for s.Next() {
		s.Batch().Release()
	}
	if st := s.Stats(); st.RowGroupsPruned != 4 || st.RowGroups != 0 {
		t.Errorf("stats %d row groups read, %d pruned; want 0, 4 (only the range counts)", st.RowGroups, st.RowGroupsPruned)
	}
	s.Close()

	// Row groups the file does not have: nothing to read, no error.
	mem := checked(t)
	ds, err = Open(ctx, st, "taxi/", Options{Mem: mem, RowGroups: inRange(6, 10)})
	if err != nil {
		t.Fatalf("out-of-range row groups: %v, want an empty dataset", err)
	}
	if ds.RowGroups() != 0 || len(ds.Plan()) != 0 || ds.BytesNeeded() != 0 {
		t.Fatalf("out-of-range row groups: %d to read (%d bytes)", ds.RowGroups(), ds.BytesNeeded())
	}
	if got, _ := scanGroups(t, ds); len(got) != 0 {
		t.Fatalf("out-of-range row groups read %v", got)
	}
}
