package fanout

import (
	"errors"
	"strings"
	"testing"
)

// TestCheckPin: a worker runs the bytes its driver pinned and nothing
// else: not a byte changed, not a spec without a pin.
func TestCheckPin(t *testing.T) {
	b := []byte(`{"version": 2}`)
	if err := checkPin(b, specSum(b), "u"); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		b    []byte
		pin  string
		want string
	}{
		{append(b, ' '), specSum(b), "not the spec its driver wrote"},
		{b, "", "no --spec-sha256"},
		{b, strings.Repeat("0", 64), "not the spec its driver wrote"},
	} {
		err := checkPin(c.b, c.pin, "u")
		if !errors.Is(err, errUnpinned) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("checkPin(%q, %q) = %v, want %q", c.b, c.pin, err, c.want)
		}
	}
	if signSpec([]byte("k1"), b) == signSpec([]byte("k2"), b) || signSpec([]byte("k1"), b) == signSpec([]byte("k1"), append(b, ' ')) {
		t.Fatal("a signature does not depend on the key and the bytes")
	}
}

// TestTaskFromArgs reads what PhaseRun.Args gives a worker.
func TestTaskFromArgs(t *testing.T) {
	t.Setenv("JOB_COMPLETION_INDEX", "4")
	t.Setenv("SLUICE_ATTEMPT", "a1")
	r := PhaseRun{Spec: "file:///j/job.json", Phase: 1, SpecSum: "ab"}
	got, err := TaskFromArgs(r.Args())
	want := Task{Spec: r.Spec, Phase: 1, Index: 4, Attempt: "a1", SpecSum: "ab"}
	if err != nil || got.Spec != want.Spec || got.Phase != want.Phase || got.Index != want.Index || got.Attempt != want.Attempt || got.SpecSum != want.SpecSum {
		t.Fatalf("TaskFromArgs(%q) = %+v, %v; want %+v", r.Args(), got, err, want)
	}
	for _, args := range [][]string{nil, {"s", "--phase", "x"}, {"s", "--nope"}, {"s", "extra", "--phase", "1"}} {
		if _, err := TaskFromArgs(args); err == nil {
			t.Errorf("TaskFromArgs(%q): no error", args)
		}
	}
}
