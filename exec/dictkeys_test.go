package exec

import (
	"slices"
	"testing"
)

// TestDictKeys: an aggregation after a scan, through stages that pass
// its keys on untouched and read none of them, has the scan read its
// string keys as dictionaries; the rows are those of the same stages
// over the values.
func TestDictKeys(t *testing.T) {
	taxi, _ := testData(t)
	must := mustStage(t)
	for _, c := range []struct {
		name   string
		stages []Stage
		want   []string // dictKeys
	}{
		{"count-by", []Stage{CountBy([]string{"payment_type"})}, []string{"payment_type"}},
		{"filter, extend, select", []Stage{
			must(Filter("trip_distance > 2")),
			Extend(Computed{Name: "f2", Expr: "fare_amount * 2"}),
			Select("payment_type", "vendor_id", "f2"),
			must(AggBy([]string{"payment_type", "vendor_id"}, "sum(f2) as f, count() as n")),
		}, []string{"payment_type", "vendor_id"}},
		{"filter reads a key", []Stage{must(Filter("payment_type <> 'cash'")), CountBy([]string{"payment_type"})}, nil},
		{"aggregate reads a key", []Stage{must(AggBy([]string{"payment_type"}, "count(distinct payment_type) as d"))}, nil},
		{"select drops it", []Stage{Select("vendor_id"), CountBy([]string{"vendor_id"})}, []string{"vendor_id"}},
		{"sort before", []Stage{Sort([]SortKey{{Column: "vendor_id"}}), CountBy([]string{"payment_type"})}, nil},
		{"whole", []Stage{must(aggAll("count() as n"))}, nil},
	} {
		t.Run(c.name, func(t *testing.T) {
			if got := dictKeys(c.stages); !slices.Equal(got, c.want) {
				t.Fatalf("dictKeys %q, want %q", got, c.want)
			}
			if c.want == nil {
				return
			}
			mem := checkedMem(t)
			got, err := collectRows(t, mem, Scan([]string{taxi}, ScanOptions{}), c.stages...)
			if err != nil {
				t.Fatal(err)
			}
			// The same stages over a stream of the values.
			want, err := collectRows(t, mem, bytesSource(fused(t, mem, 2, Scan([]string{taxi}, ScanOptions{}))), c.stages...)
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(got, want) || len(want) == 0 {
				t.Errorf("dictionary keys:\n got %q\nwant %q", got, want)
			}
		})
	}
}
