package k8s

import (
	"strings"
	"testing"

	"github.com/sluice-data/sluice/fanout/executors"
	"github.com/sluice-data/sluice/fanout/kubernetes"
)

// Imported, the package gives executors.New the kubernetes executor; a
// dry run needs no cluster, and a pod runs the driver's program by its
// base name from the image's PATH.
func TestRegistered(t *testing.T) {
	o := executors.Options{Name: "kubernetes", Image: "img", Namespace: "ns", Deadline: -1, DryRun: true}
	exe, err := executors.New(o, "/usr/local/bin/sluice-full", []string{"worker", "--spec", "s3://b/j"})
	k, ok := exe.(*kubernetes.Executor)
	if err != nil || !ok {
		t.Fatalf("New: %#v, %v", exe, err)
	}
	if k.Image != "img" || k.Namespace != "ns" || k.Deadline != -1 || k.Client != nil || strings.Join(k.Command, " ") != "sluice-full worker --spec s3://b/j" {
		t.Errorf("executor: %#v", k)
	}
}
