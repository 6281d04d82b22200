package exec

import (
	"bytes"
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow/memory"
)

// MergeSources over sorted streams gives what sorting the whole gives
// (ties from the earlier source first, as a stable sort keeps them when
// the sources are consecutive pieces), and names an unsorted source.
func TestMergeSources(t *testing.T) {
	taxi, _ := testData(t)
	mem := checkedMem(t)
	keys := []SortKey{{Column: "payment_type"}, {Column: "passenger_count", Desc: true}}
	cols := ScanOptions{Columns: []string{"payment_type", "passenger_count", "fare_amount"}}
	var sorted [][]byte
	var names []string
	for i := range 3 {
		url := fmt.Sprintf("%spart-%05d.parquet", taxi, i)
		sorted = append(sorted, streamOf(t, mem, Pipeline{Source: Scan([]string{url}, cols), Stages: []Stage{Sort(keys)}}))
		names = append(names, url)
	}
	srcs := func() []SourceStage {
		var s []SourceStage
		for _, b := range sorted {
			s = append(s, ReadIPC(bytes.NewReader(b)))
		}
		return s
	}
	want := fused(t, mem, 2, Scan([]string{taxi}, cols), Sort(keys))
	got := fused(t, mem, 2, MergeSources(keys, names, srcs()...), Select("payment_type", "passenger_count", "fare_amount"))
	if len(want) < 1000 || !bytes.Equal(got, want) {
		t.Fatal("merging sorted sources differs from sorting the whole")
	}
	unsorted := streamOf(t, mem, Pipeline{Source: Scan([]string{taxi + "part-00001.parquet"}, cols)})
	_, err := collectRows(t, mem, MergeSources(keys, []string{"first", "second"}, srcs()[0], ReadIPC(bytes.NewReader(unsorted))), Head(1_000_000))
	if err == nil || !strings.Contains(err.Error(), "second is not sorted") {
		t.Fatalf("unsorted source: %v", err)
	}
	if _, err := collectRows(t, mem, MergeSources(keys, nil, srcs()[0]), Head(1)); err == nil {
		t.Fatal("a source without a name merged")
	}
}

// streamOf runs p into an Arrow IPC stream in memory.
func streamOf(t *testing.T, mem memory.Allocator, p Pipeline) []byte {
	t.Helper()
	var buf bytes.Buffer
	p.Stages = append(p.Stages, WriteIPC(&buf))
	if err := Run(context.Background(), p, Options{Open: testOpen, Mem: mem}); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}
