package cli

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"

	"github.com/spf13/cobra"

	"github.com/sluice-data/sluice/internal/buildinfo"
	"github.com/sluice-data/sluice/store"
)

// fullName is the program that links what sluice leaves out: gs://, az://,
// the kubernetes executor and drawing, whose libraries (gRPC's xDS,
// OpenTelemetry, client-go, gonum/plot) took 30 of the 77 ms of CPU with
// which every process started, each piped stage and fanned-out task
// among them; Azure's SDK took 1-2 ms of the 43 left.
const fullName = "sluice-full"

// forwardedEnv carries sluice's build to the sluice-full it runs, which
// refuses to run for another build.
const forwardedEnv = "SLUICE_FORWARDED_BY"

// fullSchemes are the URL schemes only sluice-full reads.
var fullSchemes = []string{"gs", "az", "abfs", "abfss"}

// needsFull says why a command line needs sluice-full ("" if it does
// not): a gs:// or Azure URL anywhere in it (a pipeline's text too), the
// kubernetes executor, a drawing (sluice report, bench --plot). The rule
// reads the command line alone; such a URL that only turns up later (in
// a job's spec, an Iceberg table's metadata, a served request) fails with
// inFull's error.
func needsFull(root *cobra.Command, args []string) string {
	cmd, _, err := root.Find(args)
	if err == nil && cmd.Name() == "report" {
		return "reports"
	}
	for i, a := range args {
		switch {
		case a == "--" && err == nil && cmd.Name() == "exec":
			// What follows is the program's command line.
			return ""
		case strings.Contains(a, "gs://"):
			return "gs:// URLs"
		case strings.Contains(a, "az://"), strings.Contains(a, "abfs://"), strings.Contains(a, "abfss://"):
			return "Azure URLs"
		case a == "--executor=kubernetes", a == "--executor" && i+1 < len(args) && args[i+1] == "kubernetes":
			return "the kubernetes executor"
		case a == "--plot", strings.HasPrefix(a, "--plot="):
			return "plots"
		}
	}
	return ""
}

// forward replaces this process with sluice-full running the same
// command line: from the directory sluice is in, else from PATH. It
// returns only by exiting.
func forward(why string) {
	if os.Getenv(forwardedEnv) == buildinfo.Version() {
		// This build forwarded to itself (sluice-full unsets the
		// variable): going on would loop.
		self, _ := os.Executable()
		fmt.Fprintf(os.Stderr, "sluice: %s is sluice, not %s: install %s (%s)\n", self, fullName, fullName, installHint())
		os.Exit(exitError)
	}
	full, err := findFull()
	if err == nil {
		env := append(slices.DeleteFunc(os.Environ(), func(kv string) bool { return strings.HasPrefix(kv, forwardedEnv+"=") }),
			forwardedEnv+"="+buildinfo.Version())
		err = syscall.Exec(full, append([]string{full}, os.Args[1:]...), env)
		err = fmt.Errorf("running %s: %w", full, err)
	}
	fmt.Fprintf(os.Stderr, "sluice: for %s sluice runs %s, but %v\n", why, fullName, err)
	os.Exit(exitError)
}

func findFull() (string, error) {
	if self, err := os.Executable(); err == nil {
		p := filepath.Join(filepath.Dir(self), fullName)
		if _, err := os.Stat(p); err == nil {
			return p, nil
		}
	}
	if p, err := exec.LookPath(fullName); err == nil {
		return p, nil
	}
	return "", fmt.Errorf("it is neither beside sluice nor on PATH (%s)", installHint())
}

// installHint says how to install both programs of this build: its
// version, or for a build from a checkout (whose version go install
// cannot fetch) from the checkout.
func installHint() string {
	v := buildinfo.Module()
	if v == "(devel)" || strings.Contains(v, "+") {
		return "CGO_ENABLED=0 go install ./cmd/... in sluice's checkout"
	}
	return "CGO_ENABLED=0 go install github.com/sluice-data/sluice/cmd/...@" + v
}

// checkForwarded refuses a command line forwarded by another build of
// sluice: the two programs must agree on flags, pipes and job specs.
func checkForwarded() {
	by, ok := os.LookupEnv(forwardedEnv)
	if !ok {
		return
	}
	os.Unsetenv(forwardedEnv)
	if mine := buildinfo.Version(); by != mine {
		fmt.Fprintf(os.Stderr, "sluice: sluice (%s) and %s (%s) are different builds: install both from one version (%s)\n", by, fullName, mine, installHint())
		os.Exit(exitError)
	}
}

// inFull is sluice's driver of a scheme only sluice-full reads: a URL of
// it that was not on the command line (so that sluice did not forward it)
// is refused with how to read it.
func inFull(scheme string) store.SchemeOpener {
	return func(context.Context, string, store.Options) (store.Driver, error) {
		return nil, notLinked(scheme)
	}
}

type notLinked string

func (s notLinked) Error() string {
	return string(s) + ":// is read by " + fullName + ", which sluice runs when " + string(s) + ":// is on its command line; run this command with " + fullName
}

func (notLinked) Is(target error) bool { return target == store.ErrInvalid }
