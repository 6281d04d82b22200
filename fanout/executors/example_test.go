package executors_test

import (
	"errors"
	"fmt"

	"github.com/sluice-data/sluice/fanout/executors"
	_ "github.com/sluice-data/sluice/fanout/executors/k8s" // the kubernetes executor
)

// Make the executor a user chose by name (sluice run --executor NAME):
// each kind configured from the one set of options, options that cannot
// make one refused as ErrInvalid. DryRun asks for an executor that only
// shows its manifests: kubernetes then needs no cluster.
func ExampleNew() {
	for _, o := range []executors.Options{
		{Name: "local", Env: []string{"SLUICE_LOG=debug"}},
		{Name: "slurm", Sbatch: []string{"--partition=batch"}, SlurmLogs: "/shared/logs"},
		{Name: "kubernetes", Image: "ghcr.io/example/sluice:1.0", DryRun: true},
		{Name: "kubernetes", DryRun: true},
		{Name: "local", DryRun: true},
		{Name: "ssh"},
	} {
		ex, err := executors.New(o, "/usr/local/bin/sluice", []string{"worker"})
		if err != nil {
			fmt.Printf("%s: invalid %v: %v\n", o.Name, errors.Is(err, executors.ErrInvalid), err)
			continue
		}
		fmt.Printf("%s: %T\n", o.Name, ex)
	}
	// Output:
	// local: *fanout.Local
	// slurm: *slurm.Executor
	// kubernetes: *kubernetes.Executor
	// kubernetes: invalid true: --executor kubernetes needs --image, an image with sluice-full on its PATH (see the Dockerfile)
	// local: invalid true: --dry-run: the local executor submits nothing; use it with --executor slurm or kubernetes
	// ssh: invalid true: --executor "ssh": want local, slurm or kubernetes
}
