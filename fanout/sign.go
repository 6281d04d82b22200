package fanout

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"flag"
	"fmt"
	"io"
	"strconv"
)

// A spec is a command line: its plan may run programs (an exec stage).
// Workers read it from the store, so anyone who can write there could
// make every worker run anything, unless a worker runs only the spec its
// driver wrote. The driver gives each worker the spec's SHA-256 in its
// arguments (PhaseRun.SpecSum), which only the driver's submission sets
// (a process's argv, Slurm's batch script, a Job's pod template); a
// worker refuses a spec whose bytes do not hash to it. This pins the
// bytes as an HMAC with a per-job key given to the workers would, with
// no secret to hand out: nothing for Slurm's job records or a Kubernetes
// Secret to hold.
//
// A driver that resumes a job reads the spec from the store too, after
// the one that wrote it died: it trusts only a spec signed (an HMAC in
// sigKey) with Options.Key, which never leaves the driver's machine.

// sigKey is the object holding the spec's HMAC, beside specKey.
const sigKey = "job.sig"

// specSum is the pin of a spec's bytes.
func specSum(b []byte) string {
	h := sha256.Sum256(b)
	return hex.EncodeToString(h[:])
}

// errUnpinned marks a spec a worker must not run.
var errUnpinned = errors.New("refused")

// checkPin says whether b is the spec the driver pinned.
func checkPin(b []byte, want, url string) error {
	if want == "" {
		return fmt.Errorf("%w: no --spec-sha256: a worker runs only a spec its driver pinned", errUnpinned)
	}
	if got := specSum(b); !hmac.Equal([]byte(got), []byte(want)) {
		return fmt.Errorf("%w to run %s: it is not the spec its driver wrote (SHA-256 %.12s…, the driver's %.12s…), it was changed in the store", errUnpinned, url, got, want)
	}
	return nil
}

// signSpec is the HMAC of a spec's bytes under key.
func signSpec(key, b []byte) string {
	m := hmac.New(sha256.New, key)
	m.Write(b)
	return hex.EncodeToString(m.Sum(nil))
}

// TaskFromArgs is the task of a worker started with the arguments a
// PhaseRun gives (SPEC --phase P --spec-sha256 SUM), its index and
// attempt from the environment as TaskFromEnv takes them: for workers
// that are not sluice's CLI, such as a test binary's.
func TaskFromArgs(args []string) (Task, error) {
	fs := flag.NewFlagSet("worker", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	phase := fs.Int("phase", 0, "")
	sum := fs.String("spec-sha256", "", "")
	if len(args) == 0 {
		return Task{}, errors.New("worker: no spec URL")
	}
	if err := fs.Parse(args[1:]); err != nil || fs.NArg() != 0 {
		return Task{}, fmt.Errorf("worker arguments %s", strconv.Quote(fmt.Sprint(args)))
	}
	t, err := TaskFromEnv(args[0], *phase, -1)
	t.SpecSum = *sum
	return t, err
}
