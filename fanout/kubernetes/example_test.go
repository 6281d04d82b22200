package kubernetes_test

import (
	"fmt"
	"log"

	corev1 "k8s.io/api/core/v1"

	"github.com/sluice-data/sluice/fanout"
	"github.com/sluice-data/sluice/fanout/kubernetes"
)

// Show the Indexed Job a phase would submit, without a cluster: Manifest
// needs no Client. sluice run --dry-run --executor kubernetes prints this,
// its pods running sluice-full.
func ExampleExecutor_Manifest() {
	k := &kubernetes.Executor{
		Namespace: "analytics",
		Image:     "ghcr.io/example/sluice:1.0",
		CPU:       "2",
		Mem:       "4Gi",
		Secret:    "s3-credentials",
		// kubernetes.WorkerEnv would add this process's AWS_REGION and
		// endpoint variables.
		Env: []corev1.EnvVar{{Name: "AWS_REGION", Value: "eu-west-1"}},
	}
	m, err := k.Manifest(fanout.PhaseRun{
		Job: "job-0123456789ab", Spec: "s3://bucket/jobs/job-0123456789ab/job.json", SpecSum: "5ca1ab1e",
		Phase: 0, Kind: fanout.PhaseMap, Tasks: 8, Workers: 4, Attempts: 3,
	})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Print(string(m))
	// Output:
	// # phase 0 (map): 8 task(s)
	// apiVersion: batch/v1
	// kind: Job
	// metadata:
	//   labels:
	//     app.kubernetes.io/component: worker
	//     app.kubernetes.io/managed-by: sluice
	//     app.kubernetes.io/name: sluice
	//     sluice.dev/job: job-0123456789ab
	//     sluice.dev/phase: "0"
	//   name: sluice-0123456789ab-p0
	//   namespace: analytics
	// spec:
	//   activeDeadlineSeconds: 86400
	//   backoffLimitPerIndex: 2
	//   completionMode: Indexed
	//   completions: 8
	//   maxFailedIndexes: 0
	//   parallelism: 4
	//   podReplacementPolicy: Failed
	//   template:
	//     metadata:
	//       labels:
	//         app.kubernetes.io/component: worker
	//         app.kubernetes.io/managed-by: sluice
	//         app.kubernetes.io/name: sluice
	//         sluice.dev/job: job-0123456789ab
	//         sluice.dev/phase: "0"
	//     spec:
	//       automountServiceAccountToken: false
	//       containers:
	//       - command:
	//         - sluice
	//         - worker
	//         - s3://bucket/jobs/job-0123456789ab/job.json
	//         - --phase
	//         - "0"
	//         - --spec-sha256
	//         - 5ca1ab1e
	//         env:
	//         - name: SLUICE_ATTEMPT
	//           valueFrom:
	//             fieldRef:
	//               fieldPath: metadata.name
	//         - name: AWS_REGION
	//           value: eu-west-1
	//         envFrom:
	//         - secretRef:
	//             name: s3-credentials
	//         image: ghcr.io/example/sluice:1.0
	//         name: worker
	//         resources:
	//           limits:
	//             cpu: "2"
	//             memory: 4Gi
	//           requests:
	//             cpu: "2"
	//             memory: 4Gi
	//         terminationMessagePolicy: FallbackToLogsOnError
	//       restartPolicy: Never
	//   ttlSecondsAfterFinished: 3600
}
