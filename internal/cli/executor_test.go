package cli

import "testing"

// TestExecutorBadFlags: executor flags that cannot work exit with one
// line, before anything runs.
func TestExecutorBadFlags(t *testing.T) {
	dir := pipeData(t)
	q := "scan " + dir + "/taxi | count-by payment_type | show"
	for _, c := range []struct {
		env     []string
		args    []string
		code    int
		mention string
	}{
		{nil, []string{"--workers", "2", "--executor", "kubernetes"}, exitUsage, "needs --image"},
		{nil, []string{"--workers", "2", "--executor", "nomad"}, exitUsage, `"nomad"`},
		{nil, []string{"--workers", "2", "--dry-run"}, exitUsage, "the local executor submits nothing"},
		{nil, []string{"--executor", "slurm"}, exitUsage, "give --workers N"},
		{nil, []string{"--workers", "2", "--executor", "kubernetes", "--image", "x", "--dry-run"}, exitUsage, "needs --store"},
		{[]string{"KUBECONFIG=", "HOME=" + t.TempDir()}, []string{"--workers", "2", "--executor", "kubernetes", "--image", "x"}, exitError, "no kubeconfig"},
		{nil, []string{"--workers", "2", "--executor", "kubernetes", "--image", "x", "--cpu", "lots", "--dry-run", "--store", t.TempDir()}, exitError, `--cpu "lots"`},
	} {
		r := sluice(t, c.env, append(append([]string{"run"}, c.args...), q)...)
		assertCleanFailure(t, r, c.code, c.mention)
	}
}
