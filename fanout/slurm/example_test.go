package slurm_test

import (
	"fmt"
	"log"
	"regexp"

	"github.com/sluice-data/sluice/fanout"
	"github.com/sluice-data/sluice/fanout/slurm"
)

var export = regexp.MustCompile(`'--export=[^']*'`)

// Show what a phase would submit, without a cluster: the batch script
// and its sbatch line (Manifest), made a command a shell runs
// (Runnable). sluice run --dry-run --executor slurm prints this.
func ExampleExecutor_Manifest() {
	s := slurm.New([]string{"/opt/sluice", "worker"})
	s.Sbatch = []string{"--partition=batch"}
	s.LogDir = "/shared/logs"
	m, err := s.Manifest(fanout.PhaseRun{
		Job: "job-ab12", Spec: "file:///shared/jobs/job-ab12/job.json", SpecSum: "5ca1ab1e",
		Phase: 0, Kind: fanout.PhaseMap, Tasks: 3, Workers: 2,
	})
	if err != nil {
		log.Fatal(err)
	}
	// The names --export passes on depend on the environment of the
	// process that builds the manifest (slurm.Exported): elided here.
	r := export.ReplaceAllString(string(slurm.Runnable(m)), "'--export=...'")
	fmt.Print(r)
	// Output:
	// # phase 0 (map): 3 task(s)
	// # The tasks get the variables --export names from the shell that runs sbatch;
	// # S3 credentials through AWS_SHARED_CREDENTIALS_FILE and AWS_PROFILE, or the nodes' own.
	// sbatch '--parsable' '--export=...' '--job-name=sluice-ab12-p0' '--array=0-2%2' '--output=/shared/logs/%A_%a.log' '--ntasks=1' '--no-requeue' '--partition=batch' <<'EOF'
	// #!/bin/sh
	// SLUICE_ATTEMPT=slurm-${SLURM_ARRAY_JOB_ID}-${SLURM_ARRAY_TASK_ID}
	// export SLUICE_ATTEMPT
	// exec '/opt/sluice' 'worker' 'file:///shared/jobs/job-ab12/job.json' '--phase' '0' '--spec-sha256' '5ca1ab1e'
	// EOF
}
