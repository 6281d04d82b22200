// Package testkubelet is a node for tests against a real Kubernetes
// control plane on one machine, where no real kubelet can run (no
// container runtime, no image registry): it registers a Node, runs the
// first container of each pod bound to it as a local process (its command
// and args looked up on a PATH of the test's, the image ignored) with the
// pod's environment (values, fieldRefs, Secrets and ConfigMaps), reports
// the pod's phase and exit code, kills the process when the pod is
// deleted and serves the pods' logs to the API server as a kubelet does.
package testkubelet

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"errors"
	"fmt"
	"math/big"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"
)

// Options configure a Kubelet.
type Options struct {
	// Node is the Node's name; default "sluice-test-<pid>".
	Node string
	// Path is searched first for the pods' commands.
	Path []string
	// Logf, when set, gets a line per pod started and ended.
	Logf func(format string, a ...any)
}

// Kubelet is a running test node.
type Kubelet struct {
	cs   kubernetes.Interface
	opts Options
	srv  *http.Server
	port int

	mu      sync.Mutex
	procs   map[types.UID]*proc
	started map[types.UID]bool // a pod's process runs once, whatever updates follow
	ending  map[types.UID]bool // deleted pods being terminated

	logsMu sync.Mutex
	ended  map[types.UID]string // output of ended processes of pods not deleted yet
	wg     sync.WaitGroup

	stop   context.CancelFunc
	closed chan struct{}
}

type proc struct {
	cmd     *exec.Cmd
	out     *tail
	deleted bool // the pod was deleted: its end is not reported
	done    chan struct{}
}

// end marks the pod deleted and kills its process if it has started.
func (pr *proc) end() {
	pr.deleted = true
	if pr.cmd != nil && pr.cmd.Process != nil {
		pr.cmd.Process.Kill()
	}
}

// Start registers the node and runs the pods bound to it until Stop.
func Start(ctx context.Context, cs kubernetes.Interface, opts Options) (*Kubelet, error) {
	if opts.Node == "" {
		opts.Node = fmt.Sprintf("sluice-test-%d", os.Getpid())
	}
	if opts.Logf == nil {
		opts.Logf = func(string, ...any) {}
	}
	ctx, stop := context.WithCancel(context.WithoutCancel(ctx))
	k := &Kubelet{cs: cs, opts: opts, procs: map[types.UID]*proc{}, started: map[types.UID]bool{}, ending: map[types.UID]bool{}, ended: map[types.UID]string{}, stop: stop, closed: make(chan struct{})}
	if err := k.serveLogs(); err != nil {
		stop()
		return nil, err
	}
	if err := k.register(ctx); err != nil {
		stop()
		k.srv.Close()
		return nil, err
	}
	lw := cache.NewListWatchFromClient(cs.CoreV1().RESTClient(), "pods", corev1.NamespaceAll, fields.OneTermEqualSelector("spec.nodeName", opts.Node))
	_, ctrl := cache.NewInformerWithOptions(cache.InformerOptions{
		ListerWatcher: lw,
		ObjectType:    &corev1.Pod{},
		Handler: cache.ResourceEventHandlerFuncs{
			AddFunc:    func(o any) { k.sync(ctx, o) },
			UpdateFunc: func(_, o any) { k.sync(ctx, o) },
			DeleteFunc: func(o any) {
				if d, ok := o.(cache.DeletedFinalStateUnknown); ok {
					o = d.Obj
				}
				if p, ok := o.(*corev1.Pod); ok {
					k.kill(p.UID)
					k.mu.Lock()
					delete(k.started, p.UID)
					delete(k.ending, p.UID)
					k.mu.Unlock()
					k.logsMu.Lock()
					delete(k.ended, p.UID)
					k.logsMu.Unlock()
				}
			},
		},
	})
	go func() {
		defer close(k.closed)
		ticker := time.NewTicker(5 * time.Second)
		defer ticker.Stop()
		go ctrl.Run(ctx.Done())
		for {
			select {
			case <-ctx.Done():
				return
			case <-ticker.C:
				k.heartbeat(ctx)
			}
		}
	}()
	return k, nil
}

// Stop kills every pod's process, stops watching and deletes the Node.
func (k *Kubelet) Stop() {
	k.stop()
	<-k.closed
	k.mu.Lock()
	for _, p := range k.procs {
		p.end()
	}
	k.mu.Unlock()
	k.wg.Wait()
	k.srv.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	k.cs.CoreV1().Nodes().Delete(ctx, k.opts.Node, metav1.DeleteOptions{})
}

// Node is the Node's name.
func (k *Kubelet) Node() string { return k.opts.Node }

func (k *Kubelet) register(ctx context.Context) error {
	node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: k.opts.Node, Labels: map[string]string{"kubernetes.io/hostname": k.opts.Node}}}
	if _, err := k.cs.CoreV1().Nodes().Create(ctx, node, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("register node %s: %w", k.opts.Node, err)
	}
	return k.heartbeat(ctx)
}

// heartbeat writes the node's status: ready, with room for many pods
// (tests oversubscribe the machine on purpose), and where its logs are.
func (k *Kubelet) heartbeat(ctx context.Context) error {
	var err error
	for range 10 {
		// The node controller writes the node too.
		if err = k.writeNodeStatus(ctx); !apierrors.IsConflict(err) {
			return err
		}
	}
	return err
}

func (k *Kubelet) writeNodeStatus(ctx context.Context) error {
	n, err := k.cs.CoreV1().Nodes().Get(ctx, k.opts.Node, metav1.GetOptions{})
	if err != nil {
		return err
	}
	now := metav1.Now()
	rl := corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("64"), corev1.ResourceMemory: resource.MustParse("256Gi"), corev1.ResourcePods: resource.MustParse("200")}
	n.Status.Capacity, n.Status.Allocatable = rl, rl
	n.Status.Addresses = []corev1.NodeAddress{{Type: corev1.NodeInternalIP, Address: "127.0.0.1"}}
	n.Status.DaemonEndpoints.KubeletEndpoint.Port = int32(k.port)
	n.Status.Conditions = []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue, Reason: "TestKubeletReady",
		Message: "sluice's test kubelet runs pods as local processes", LastHeartbeatTime: now, LastTransitionTime: now}}
	_, err = k.cs.CoreV1().Nodes().UpdateStatus(ctx, n, metav1.UpdateOptions{})
	return err
}

// sync starts a new pod's process, or ends a deleted pod's.
func (k *Kubelet) sync(ctx context.Context, o any) {
	p, ok := o.(*corev1.Pod)
	if !ok {
		return
	}
	if p.DeletionTimestamp != nil {
		k.terminate(ctx, p)
		return
	}
	if p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed || len(p.Spec.Containers) == 0 {
		return
	}
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.started[p.UID] || ctx.Err() != nil {
		return
	}
	pr := &proc{out: &tail{}, done: make(chan struct{})}
	k.procs[p.UID] = pr
	k.started[p.UID] = true
	k.wg.Add(1)
	go func() {
		defer k.wg.Done()
		k.run(ctx, p.DeepCopy(), pr)
	}()
}

// terminate kills a deleted pod's process, reports it failed and removes
// the pod, as a kubelet does at the end of a graceful deletion.
func (k *Kubelet) terminate(ctx context.Context, p *corev1.Pod) {
	k.mu.Lock()
	if k.ending[p.UID] {
		k.mu.Unlock()
		return
	}
	k.ending[p.UID] = true
	pr := k.procs[p.UID]
	if pr != nil && !pr.deleted {
		pr.end()
	}
	k.mu.Unlock()
	k.wg.Add(1)
	go func() {
		defer k.wg.Done()
		if pr != nil {
			<-pr.done
			if p.Status.Phase != corev1.PodSucceeded && p.Status.Phase != corev1.PodFailed {
				k.setStatus(ctx, p, func(st *corev1.PodStatus) {
					finished(st, p, 137, "Killed", pr.out.String(), true)
				})
			}
		}
		uid := p.UID
		err := k.cs.CoreV1().Pods(p.Namespace).Delete(ctx, p.Name, metav1.DeleteOptions{GracePeriodSeconds: ptr(int64(0)), Preconditions: &metav1.Preconditions{UID: &uid}})
		if err != nil && !apierrors.IsNotFound(err) && !apierrors.IsConflict(err) && ctx.Err() == nil {
			k.opts.Logf("delete pod %s/%s: %v", p.Namespace, p.Name, err)
		}
	}()
}

func (k *Kubelet) kill(uid types.UID) {
	k.mu.Lock()
	defer k.mu.Unlock()
	if pr := k.procs[uid]; pr != nil && !pr.deleted {
		pr.end()
	}
}

func ptr[T any](v T) *T { return &v }

// run runs the pod's first container to its end and reports it.
func (k *Kubelet) run(ctx context.Context, p *corev1.Pod, pr *proc) {
	defer close(pr.done)
	c := p.Spec.Containers[0]
	argv := append(append([]string(nil), c.Command...), c.Args...)
	env, err := k.env(ctx, p, &c)
	start := metav1.Now()
	if err == nil && len(argv) == 0 {
		err = errors.New("the container has no command")
	}
	var path string
	if err == nil {
		path, err = k.lookPath(argv[0])
	}
	if err != nil {
		k.opts.Logf("pod %s/%s: %v", p.Namespace, p.Name, err)
		k.forget(p.UID, err.Error())
		k.setStatus(ctx, p, func(st *corev1.PodStatus) { finished(st, p, 128, "StartError", err.Error(), false) })
		return
	}
	cmd := exec.Command(path, argv[1:]...)
	cmd.Args[0] = argv[0]
	cmd.Env = env
	cmd.Stdout, cmd.Stderr = pr.out, pr.out
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	k.mu.Lock()
	pr.cmd = cmd
	if pr.deleted { // deleted before it started
		k.mu.Unlock()
		k.forget(p.UID, "")
		return
	}
	err = cmd.Start()
	k.mu.Unlock()
	if err != nil {
		k.forget(p.UID, err.Error())
		k.setStatus(ctx, p, func(st *corev1.PodStatus) { finished(st, p, 128, "StartError", err.Error(), false) })
		return
	}
	k.opts.Logf("pod %s/%s: pid %d", p.Namespace, p.Name, cmd.Process.Pid)
	k.setStatus(ctx, p, func(st *corev1.PodStatus) {
		st.Phase = corev1.PodRunning
		st.StartTime = &start
		st.HostIP, st.PodIP = "127.0.0.1", "127.0.0.1"
		st.Conditions = []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue, LastTransitionTime: start}}
		st.ContainerStatuses = []corev1.ContainerStatus{{Name: c.Name, Image: c.Image, ImageID: c.Image, Ready: true, Started: ptr(true),
			ContainerID: fmt.Sprintf("process://%d", cmd.Process.Pid),
			State:       corev1.ContainerState{Running: &corev1.ContainerStateRunning{StartedAt: start}}}}
	})
	err = cmd.Wait()
	// The worker's children go with it.
	syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
	code := int32(0)
	if err != nil {
		code = 1
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			code = int32(ee.ExitCode())
			if code < 0 {
				code = 137
			}
		}
	}
	k.mu.Lock()
	deleted := pr.deleted
	k.mu.Unlock()
	k.forget(p.UID, pr.out.String())
	k.opts.Logf("pod %s/%s: exit %d", p.Namespace, p.Name, code)
	if deleted {
		return // terminate reports it
	}
	k.setStatus(ctx, p, func(st *corev1.PodStatus) {
		finished(st, p, code, "", pr.out.String(), c.TerminationMessagePolicy == corev1.TerminationMessageFallbackToLogsOnError)
	})
}

// forget moves an ended process's output to the logs kept until its pod
// is deleted.
func (k *Kubelet) forget(uid types.UID, out string) {
	k.logsMu.Lock()
	k.ended[uid] = out
	k.logsMu.Unlock()
	k.mu.Lock()
	delete(k.procs, uid)
	k.mu.Unlock()
}

// finished sets a pod's status to its container's end.
func finished(st *corev1.PodStatus, p *corev1.Pod, code int32, reason, log string, logAsMessage bool) {
	c := p.Spec.Containers[0]
	now := metav1.Now()
	st.Phase = corev1.PodSucceeded
	if reason == "" {
		reason = "Completed"
	}
	msg := ""
	if code != 0 {
		st.Phase = corev1.PodFailed
		if reason == "Completed" {
			reason = "Error"
		}
		if logAsMessage {
			// As a kubelet's FallbackToLogsOnError: the last 80 lines, at most 2 KiB.
			lines := strings.Split(strings.TrimRight(log, "\n"), "\n")
			msg = strings.Join(lines[max(0, len(lines)-80):], "\n")
			if len(msg) > 2048 {
				msg = msg[len(msg)-2048:]
			}
		}
	}
	started := now
	if st.StartTime != nil {
		started = *st.StartTime
	}
	st.Conditions = []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionFalse, LastTransitionTime: now}}
	st.ContainerStatuses = []corev1.ContainerStatus{{Name: c.Name, Image: c.Image, ImageID: c.Image, Started: ptr(false),
		State: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: code, Reason: reason, Message: msg, StartedAt: started, FinishedAt: now}}}}
}

// setStatus applies set to the pod's latest status and writes it,
// retrying on conflicts.
func (k *Kubelet) setStatus(ctx context.Context, p *corev1.Pod, set func(*corev1.PodStatus)) {
	for range 10 {
		cur, err := k.cs.CoreV1().Pods(p.Namespace).Get(ctx, p.Name, metav1.GetOptions{})
		if err != nil || cur.UID != p.UID {
			return // gone
		}
		set(&cur.Status)
		if _, err = k.cs.CoreV1().Pods(p.Namespace).UpdateStatus(ctx, cur, metav1.UpdateOptions{}); err == nil {
			p.Status = cur.Status
			return
		}
		if !apierrors.IsConflict(err) {
			if ctx.Err() == nil {
				k.opts.Logf("status of pod %s/%s: %v", p.Namespace, p.Name, err)
			}
			return
		}
	}
}

func (k *Kubelet) lookPath(name string) (string, error) {
	if strings.Contains(name, "/") {
		return name, nil
	}
	for _, dir := range k.opts.Path {
		f := filepath.Join(dir, name)
		if st, err := os.Stat(f); err == nil && !st.IsDir() && st.Mode()&0o111 != 0 {
			return f, nil
		}
	}
	return exec.LookPath(name)
}

var fieldRe = regexp.MustCompile(`^metadata\.(labels|annotations)\['(.+)'\]$`)

// env is the container's environment as a kubelet would make it, on a
// base of PATH, HOME and TMPDIR only: nothing of the test's own
// environment (its S3 credentials, say) leaks into the pods.
func (k *Kubelet) env(ctx context.Context, p *corev1.Pod, c *corev1.Container) ([]string, error) {
	path := strings.Join(append(append([]string(nil), k.opts.Path...), "/usr/local/bin", "/usr/bin", "/bin"), ":")
	env := []string{"PATH=" + path, "HOME=" + os.Getenv("HOME"), "TMPDIR=" + os.TempDir(), "HOSTNAME=" + p.Name}
	for _, from := range c.EnvFrom {
		var data map[string]string
		switch {
		case from.SecretRef != nil:
			s, err := k.cs.CoreV1().Secrets(p.Namespace).Get(ctx, from.SecretRef.Name, metav1.GetOptions{})
			if err != nil {
				return nil, fmt.Errorf("secret %s: %w", from.SecretRef.Name, err)
			}
			data = map[string]string{}
			for key, v := range s.Data {
				data[key] = string(v)
			}
			for key, v := range s.StringData {
				data[key] = v
			}
		case from.ConfigMapRef != nil:
			cm, err := k.cs.CoreV1().ConfigMaps(p.Namespace).Get(ctx, from.ConfigMapRef.Name, metav1.GetOptions{})
			if err != nil {
				return nil, fmt.Errorf("config map %s: %w", from.ConfigMapRef.Name, err)
			}
			data = cm.Data
		}
		for key, v := range data {
			env = append(env, from.Prefix+key+"="+v)
		}
	}
	for _, e := range c.Env {
		v := e.Value
		if src := e.ValueFrom; src != nil {
			switch {
			case src.FieldRef != nil:
				var err error
				if v, err = fieldValue(p, src.FieldRef.FieldPath); err != nil {
					return nil, fmt.Errorf("env %s: %w", e.Name, err)
				}
			case src.SecretKeyRef != nil:
				s, err := k.cs.CoreV1().Secrets(p.Namespace).Get(ctx, src.SecretKeyRef.Name, metav1.GetOptions{})
				if err != nil {
					return nil, fmt.Errorf("env %s: %w", e.Name, err)
				}
				v = string(s.Data[src.SecretKeyRef.Key])
			default:
				return nil, fmt.Errorf("env %s: only values, fieldRefs and secretKeyRefs are supported", e.Name)
			}
		}
		env = append(env, e.Name+"="+v)
	}
	return env, nil
}

func fieldValue(p *corev1.Pod, path string) (string, error) {
	switch path {
	case "metadata.name":
		return p.Name, nil
	case "metadata.namespace":
		return p.Namespace, nil
	case "metadata.uid":
		return string(p.UID), nil
	case "spec.nodeName":
		return p.Spec.NodeName, nil
	case "spec.serviceAccountName":
		return p.Spec.ServiceAccountName, nil
	case "status.hostIP", "status.podIP":
		return "127.0.0.1", nil
	}
	if m := fieldRe.FindStringSubmatch(path); m != nil {
		if m[1] == "labels" {
			return p.Labels[m[2]], nil
		}
		return p.Annotations[m[2]], nil
	}
	return "", fmt.Errorf("field %q is not supported", path)
}

// serveLogs serves GET /containerLogs/NAMESPACE/POD/CONTAINER (with
// tailLines) over TLS, where the API server reads a pod's log.
func (k *Kubelet) serveLogs() error {
	cert, err := selfSigned()
	if err != nil {
		return err
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return err
	}
	k.port = ln.Addr().(*net.TCPAddr).Port
	mux := http.NewServeMux()
	mux.HandleFunc("GET /containerLogs/{ns}/{pod}/{container}", func(w http.ResponseWriter, r *http.Request) {
		out, ok := k.logOf(r.Context(), r.PathValue("ns"), r.PathValue("pod"))
		if !ok {
			http.Error(w, "no such pod on this node", http.StatusNotFound)
			return
		}
		if n, err := strconv.Atoi(r.URL.Query().Get("tailLines")); err == nil && n >= 0 {
			lines := strings.SplitAfter(out, "\n")
			if lines[len(lines)-1] == "" {
				lines = lines[:len(lines)-1]
			}
			out = strings.Join(lines[max(0, len(lines)-n):], "")
		}
		w.Header().Set("Content-Type", "text/plain")
		w.Write([]byte(out))
	})
	k.srv = &http.Server{Handler: mux, TLSConfig: &tls.Config{Certificates: []tls.Certificate{cert}}, ReadHeaderTimeout: 10 * time.Second}
	go k.srv.ServeTLS(ln, "", "")
	return nil
}

// logOf is the output of the pod's process, running or ended and not
// yet forgotten.
func (k *Kubelet) logOf(ctx context.Context, ns, name string) (string, bool) {
	p, err := k.cs.CoreV1().Pods(ns).Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		return "", false
	}
	k.mu.Lock()
	pr := k.procs[p.UID]
	k.mu.Unlock()
	if pr != nil {
		return pr.out.String(), true
	}
	k.logsMu.Lock()
	defer k.logsMu.Unlock()
	out, ok := k.ended[p.UID]
	return out, ok
}

func selfSigned() (tls.Certificate, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return tls.Certificate{}, err
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "sluice-test-kubelet"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(24 * time.Hour),
		IPAddresses: []net.IP{net.IPv4(127, 0, 0, 1)}, KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		return tls.Certificate{}, err
	}
	return tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key}, nil
}

// tail keeps the last 64 KiB a process writes.
type tail struct {
	mu  sync.Mutex
	buf []byte
}

func (t *tail) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.buf = append(t.buf, p...)
	if len(t.buf) > 64<<10 {
		t.buf = append([]byte(nil), t.buf[len(t.buf)-64<<10:]...)
	}
	return len(p), nil
}

func (t *tail) String() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return string(t.buf)
}
