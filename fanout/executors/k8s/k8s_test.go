package k8s

import (
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/sluice-data/sluice/fanout/executors"
	"github.com/sluice-data/sluice/fanout/kubernetes"
)

// Imported, the package gives executors.New the kubernetes executor with
// every option; a dry run needs no cluster, and the pods run sluice-full
// from the image's PATH whatever the driver's file is called.
func TestRegistered(t *testing.T) {
	o := executors.Options{Name: "kubernetes", Image: "img", Namespace: "ns", Deadline: -1, TTL: time.Minute, DryRun: true,
		CPU: "500m", Mem: "1Gi", Secret: "keys", ServiceAccount: "reader", Env: []string{"AWS_ENDPOINT_URL=http://s3.local", "SLUICE_LOG=debug"}}
	exe, err := executors.New(o, "/opt/sluice/sluice-full-1.4", []string{"worker", "--spec", "s3://b/j"})
	k, ok := exe.(*kubernetes.Executor)
	if err != nil || !ok {
		t.Fatalf("New: %#v, %v", exe, err)
	}
	if k.Image != "img" || k.Namespace != "ns" || k.Deadline != -1 || k.TTL != time.Minute || k.Client != nil ||
		k.CPU != "500m" || k.Mem != "1Gi" || k.Secret != "keys" || k.ServiceAccount != "reader" ||
		strings.Join(k.Command, " ") != "sluice-full worker --spec s3://b/j" {
		t.Errorf("executor: %#v", k)
	}
	if want := kubernetes.WorkerEnv(o.Env); len(want) == 0 || !reflect.DeepEqual(k.Env, want) {
		t.Errorf("env %v, want %v", k.Env, want)
	}
}
