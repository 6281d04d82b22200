package exec

import (
	"bytes"
	"context"
	"errors"
	"testing"

	"github.com/sluice-data/sluice/plan"
)

// A plan compiles to the stages written by hand, with env.Output after a
// plan that ends in no sink; a stage command's plan runs over the stream
// it is given.
func TestCompile(t *testing.T) {
	taxi, _ := testData(t)
	mem := checkedMem(t)
	must := mustStage(t)
	want := fused(t, mem, 2, Scan([]string{taxi}, ScanOptions{Columns: []string{"payment_type", "fare_amount"}}),
		must(Filter("fare_amount > 20")), CountBy([]string{"payment_type"}), Top(2, []SortKey{{Column: "count", Desc: true}}))

	p, err := plan.Parse("scan " + taxi + " --columns payment_type,fare_amount | filter 'fare_amount > 20' | count-by payment_type | top 2 --by count --desc")
	if err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	pipe, err := Compile(p, Env{Output: WriteIPC(&out)})
	if err != nil {
		t.Fatal(err)
	}
	if len(pipe.Stages) != 4 || !IsSink(pipe.Stages[3]) {
		t.Fatalf("%d stages", len(pipe.Stages))
	}
	if err := Run(context.Background(), pipe, Options{Open: testOpen, Mem: mem, Workers: 2}); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(out.Bytes(), want) {
		t.Fatalf("compiled %q, by hand %q", table(t, out.Bytes()), table(t, want))
	}

	// The same stages as commands, each over the stream of the one before.
	stream := fused(t, mem, 2, Scan([]string{taxi}, ScanOptions{Columns: []string{"payment_type", "fare_amount"}}))
	for _, st := range p.Stages[1:] {
		var next bytes.Buffer
		pipe, err := Compile(&plan.Plan{Stages: []plan.Stage{st}}, Env{Input: true, Stdin: bytes.NewReader(stream), Output: WriteIPC(&next)})
		if err != nil {
			t.Fatal(err)
		}
		if err := Run(context.Background(), pipe, Options{Mem: mem}); err != nil {
			t.Fatal(err)
		}
		stream = next.Bytes()
	}
	if !bytes.Equal(stream, want) {
		t.Fatalf("piped %q, by hand %q", table(t, stream), table(t, want))
	}

	// A source where a stream is given, and no source without one.
	if _, err := Compile(p, Env{Input: true}); !errors.Is(err, ErrInvalid) {
		t.Errorf("a scan over a given stream: %v", err)
	}
	if _, err := Compile(&plan.Plan{Stages: p.Stages[1:]}, Env{}); !errors.Is(err, ErrInvalid) {
		t.Errorf("no source: %v", err)
	}
	// An aggregation compiles to its two sides; other stages do not.
	if _, _, err := CompileAgg(p.Stages[2]); err != nil {
		t.Error(err)
	}
	if _, _, err := CompileAgg(p.Stages[1]); !errors.Is(err, ErrInvalid) {
		t.Errorf("CompileAgg(filter): %v", err)
	}
}
