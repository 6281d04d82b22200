// Package k8s adds the kubernetes executor to executors.New when it is
// imported for its side effect:
//
//	import _ "github.com/sluice-data/sluice/fanout/executors/k8s"
//
// It is a package of its own because the Kubernetes client's packages
// cost every process that links them tens of milliseconds to start:
// sluice, which each piped stage and fanned-out task starts, leaves it
// out, and sluice-full links it.
package k8s

import (
	"github.com/sluice-data/sluice/fanout"
	"github.com/sluice-data/sluice/fanout/executors"
	"github.com/sluice-data/sluice/fanout/kubernetes"
)

func init() { executors.RegisterKubernetes(newExecutor) }

func newExecutor(o executors.Options, command []string) (fanout.Executor, error) {
	k := &kubernetes.Executor{Namespace: o.Namespace, Image: o.Image, Secret: o.Secret, ServiceAccount: o.ServiceAccount,
		CPU: o.CPU, Mem: o.Mem, Deadline: o.Deadline, TTL: o.TTL, Command: command}
	// The store's endpoint and region reach the workers as they reach
	// this process.
	k.Env = kubernetes.WorkerEnv(o.Env)
	if !o.DryRun {
		cs, ns, err := kubernetes.FromKubeconfig()
		if err != nil {
			return nil, err
		}
		k.Client = cs
		if k.Namespace == "" {
			k.Namespace = ns
		}
	}
	return k, nil
}
