package fanouthook

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/spf13/pflag"
)

// Bind's flags are hidden and set no hook by default; Apply then adds
// nothing to the workers' environment and gives the driver no hook.
func TestFlagsBind(t *testing.T) {
	var f Flags
	fs := pflag.NewFlagSet("run", pflag.ContinueOnError)
	f.Bind(fs)
	if err := fs.Parse(nil); err != nil {
		t.Fatal(err)
	}
	n := 0
	fs.VisitAll(func(fl *pflag.Flag) {
		n++
		if !fl.Hidden {
			t.Errorf("--%s is not hidden", fl.Name)
		}
	})
	if n != 6 {
		t.Errorf("Bind defined %d flags; want 6", n)
	}
	ctx, env := f.Apply(context.Background(), []string{"A=1"})
	h := From(ctx)
	if !slices.Equal(env, []string{"A=1"}) || h.DuplicateAll || h.LeaseEvery != 0 || h.SpecEdit != nil {
		t.Errorf("Apply of the defaults: env %q, hooks %+v", env, h)
	}

	args := []string{"--x-duplicate-all", "--x-pause-before-commit", "1m30s", "--x-lease-every", "2s",
		"--x-spec-plan", `{"stages":[]}`, "--x-worker-env", "A=B", "--x-worker-env", EnvFail + "=0/1"}
	if err := fs.Parse(args); err != nil {
		t.Fatal(err)
	}
	ctx, env = f.Apply(context.Background(), nil)
	h = From(ctx)
	if want := []string{"A=B", EnvFail + "=0/1", EnvPause + "=1m30s"}; !slices.Equal(env, want) {
		t.Errorf("env %q; want %q", env, want)
	}
	if !h.DuplicateAll || h.LeaseEvery != 2*time.Second || h.SpecEdit == nil {
		t.Fatalf("hooks %+v", h)
	}
	if got := string(h.SpecEdit([]byte(`{"plan":1}`))); got != `{"plan":{"stages":[]}}` {
		t.Errorf("--x-spec-plan's edit: %s", got)
	}
	// A corrupt spec wins over a plan put in it.
	f.CorruptSpec = true
	ctx, _ = f.Apply(context.Background(), nil)
	if got := string(From(ctx).SpecEdit([]byte("abcd"))); got != "ab" {
		t.Errorf("--x-corrupt-spec's edit: %q", got)
	}
}
