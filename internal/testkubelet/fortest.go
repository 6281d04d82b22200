package testkubelet

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"net/http"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	utilnet "k8s.io/apimachinery/pkg/util/net"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
)

// ForTest connects to the control plane of kubeconfig, makes a namespace
// of a fresh name that begins with prefix, and starts a Kubelet on a node
// named as the namespace; both are gone, and the client's connections
// closed, when the test ends.
func ForTest(tb testing.TB, kubeconfig, prefix string, opts Options) (kubernetes.Interface, string) {
	tb.Helper()
	cfg, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
	if err != nil {
		tb.Fatal(err)
	}
	cfg.QPS, cfg.Burst = 100, 200 // the kubelet writes every pod's status
	// A transport of our own, to close its connections at the end.
	tr, err := rest.TransportFor(cfg)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { utilnet.CloseIdleConnectionsFor(tr) })
	cs, err := kubernetes.NewForConfigAndClient(cfg, &http.Client{Transport: tr})
	if err != nil {
		tb.Fatal(err)
	}
	var b [4]byte
	rand.Read(b[:])
	ns := prefix + hex.EncodeToString(b[:])
	ctx := context.Background()
	if _, err := cs.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
		tb.Fatal(err)
	}
	opts.Node = ns
	kl, err := Start(ctx, cs, opts)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() {
		kl.Stop()
		cs.CoreV1().Namespaces().Delete(context.Background(), ns, metav1.DeleteOptions{})
	})
	return cs, ns
}
