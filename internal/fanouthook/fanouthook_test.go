package fanouthook

import (
	"testing"
	"time"
)

func TestPause(t *testing.T) {
	t.Setenv(EnvPause, "1s")
	t.Setenv(EnvStraggle, Straggle(0, 2, 30*time.Second))
	for _, c := range []struct {
		phase, task int
		attempt     string
		want        time.Duration
	}{
		{0, 2, "a1", 31 * time.Second},
		{0, 2, "a2", time.Second},
		{0, 1, "a1", time.Second},
		{1, 2, "a1", time.Second},
	} {
		got, err := Pause(c.phase, c.task, c.attempt)
		if err != nil || got != c.want {
			t.Errorf("Pause(%d, %d, %q) = %v, %v; want %v", c.phase, c.task, c.attempt, got, err, c.want)
		}
	}
	t.Setenv(EnvStraggle, "0/x/1s")
	if _, err := Pause(0, 0, "a1"); err == nil {
		t.Error("a malformed straggle was taken")
	}
}

func TestFail(t *testing.T) {
	if err := Fail(0, 3, "a1"); err != nil {
		t.Fatalf("without %s: %v", EnvFail, err)
	}
	t.Setenv(EnvFail, "1/3")
	for _, c := range []struct {
		phase, task int
		attempt     string
		fails       bool
	}{
		{1, 3, "a1", true},
		{1, 3, "a2", false},
		{0, 3, "a1", false},
		{1, 2, "a1", false},
	} {
		if err := Fail(c.phase, c.task, c.attempt); (err != nil) != c.fails {
			t.Errorf("Fail(%d, %d, %q) = %v; want failure %v", c.phase, c.task, c.attempt, err, c.fails)
		}
	}
	t.Setenv(EnvFail, "x")
	if err := Fail(0, 0, "a2"); err == nil {
		t.Error("a malformed fail hook was taken")
	}
}

func TestSpecEdits(t *testing.T) {
	spec := []byte(`{"version":1,"plan":{"stages":[]},"phases":[1,2]}`)
	if got := HalveSpec(spec); string(got) != string(spec[:len(spec)/2]) {
		t.Errorf("HalveSpec = %q", got)
	}
	got := ReplacePlan(`{"stages":[{"op":"teleport"}]}`)(spec)
	if want := `{"phases":[1,2],"plan":{"stages":[{"op":"teleport"}]},"version":1}`; string(got) != want {
		t.Errorf("ReplacePlan = %s, want %s", got, want)
	}
	if got := ReplacePlan(`{}`)([]byte("not json")); string(got) != "not json" {
		t.Errorf("ReplacePlan of a spec that is not JSON = %q", got)
	}
}
