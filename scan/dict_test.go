package scan

import (
	"context"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"

	"github.com/sluice-data/sluice/gen"
)

// TestReadDict: string columns named in ReadDict come as dictionaries
// holding the same values, a column the filter reads too (the filter
// compares its values); other types come as values.
func TestReadDict(t *testing.T) {
	st, files := genStore(t, "lineitem", gen.Options{Rows: 30_000, Files: 2, Seed: 5, RowGroupRows: 4000})
	columns := []string{"l_returnflag", "l_shipmode", "l_quantity", "l_comment"}
	want := reference(t, files, columns, nil)
	opts := Options{Mem: checked(t), Columns: columns, BatchRows: 1500, ReadDict: []string{"l_returnflag", "l_quantity", "l_comment", "l_shipmode"}, Filter: "l_shipmode != 'nowhere'"}
	ds, err := Open(context.Background(), st, "lineitem/", opts)
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range ds.Schema().Fields() {
		dict := f.Type.ID() == arrow.DICTIONARY
		if wantDict := f.Name != "l_quantity"; dict != wantDict {
			t.Errorf("column %s is %s", f.Name, f.Type)
		}
	}
	got, _ := scanAll(t, st, "lineitem/", opts)
	if got.String() != want.String() {
		t.Fatalf("scan:      %v\nreference: %v", got, want)
	}
}
