// Package kubernetes is fanout's Kubernetes executor: each phase of a
// job one Indexed Job. It is apart from fanout so that a program that
// fans out locally or on Slurm compiles no Kubernetes client.
package kubernetes

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"sort"
	"strconv"
	"strings"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/clientcmd"
	watchtools "k8s.io/client-go/tools/watch"
	"sigs.k8s.io/yaml"

	"github.com/sluice-data/sluice/fanout"
)

// The labels on a job's Jobs and pods.
const (
	LabelJob   = "sluice.dev/job"   // the job's ID
	LabelPhase = "sluice.dev/phase" // the phase's number
)

// DefaultDeadline bounds a phase's Job when Executor.Deadline is zero: a
// day, past any phase sluice runs, short of for ever.
const DefaultDeadline = 24 * time.Hour

// Executor runs each phase as an Indexed Job: completions = tasks,
// parallelism = Workers, each index retried by the Job controller up to
// Attempts-1 times (backoffLimitPerIndex) with a replacement pod only
// once the failed one is gone (podReplacementPolicy: Failed, so two pods
// never run one index at once), and the Job failed at the first index
// that fails every attempt. The Job and its pods are deleted at the end,
// on failure and on cancellation too.
type Executor struct {
	Client    *API
	Namespace string
	// Image is the workers' container image; it must have Command's
	// program on its PATH (the repository's Dockerfile builds one with
	// sluice and sluice-full).
	Image string
	// Command is the worker's command before its arguments; nil means
	// ["sluice", "worker"].
	Command []string
	// Env is given to the workers (the S3 endpoint and region, say).
	Env []corev1.EnvVar
	// Secret, when set, names a Secret whose keys become the workers'
	// environment (AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY, ...);
	// without it, workers use the pod's own identity.
	Secret string
	// ServiceAccount, when set, is the pods' service account (an
	// identity that may read the store), its token mounted.
	ServiceAccount string
	// CPU and Mem are each worker's requests and limits ("2", "4Gi");
	// empty means none.
	CPU, Mem string
	// Deadline bounds each phase's Job (activeDeadlineSeconds), so that
	// a Job whose driver died does not run on for ever; 0 means
	// DefaultDeadline, negative none.
	Deadline time.Duration
	// TTL is how long a finished Job is kept if the driver could not
	// delete it (ttlSecondsAfterFinished). Default an hour.
	TTL time.Duration
}

// WorkerEnv is an environment for Executor.Env: the variables that
// point an S3 client at its store (AWS_ENDPOINT_URL, AWS_ENDPOINT_URL_S3,
// AWS_REGION, AWS_DEFAULT_REGION) that are set in this process, with
// their values here, so that the workers reach the store as it does;
// then each NAME=VALUE of extra.
func WorkerEnv(extra []string) []corev1.EnvVar {
	var env []corev1.EnvVar
	for _, name := range []string{"AWS_ENDPOINT_URL", "AWS_ENDPOINT_URL_S3", "AWS_REGION", "AWS_DEFAULT_REGION"} {
		if v, ok := os.LookupEnv(name); ok {
			env = append(env, corev1.EnvVar{Name: name, Value: v})
		}
	}
	for _, nv := range extra {
		name, v, _ := strings.Cut(nv, "=")
		env = append(env, corev1.EnvVar{Name: name, Value: v})
	}
	return env
}

// API is what the executor asks of the API server: Jobs (batch/v1),
// and pods and their logs (core/v1). It is two REST clients over a scheme
// of those groups alone: client-go's clientset registers every API group
// when a process starts, which every sluice command paid for (1.2 MB of
// allocations and a fifth of a command's start) though few run on
// Kubernetes.
type API struct {
	batch, core rest.Interface
}

// NewAPI is an API for the cluster cfg reaches.
func NewAPI(cfg *rest.Config) (*API, error) {
	scheme := runtime.NewScheme()
	if err := errors.Join(batchv1.AddToScheme(scheme), corev1.AddToScheme(scheme)); err != nil {
		return nil, err
	}
	codecs := serializer.NewCodecFactory(scheme)
	client := func(gv schema.GroupVersion, api string) (rest.Interface, error) {
		c := rest.CopyConfig(cfg)
		c.GroupVersion, c.APIPath = &gv, api
		c.NegotiatedSerializer = codecs.WithoutConversion()
		if c.UserAgent == "" {
			c.UserAgent = rest.DefaultKubernetesUserAgent()
		}
		return rest.RESTClientFor(c)
	}
	b, err := client(batchv1.SchemeGroupVersion, "/apis")
	if err != nil {
		return nil, err
	}
	c, err := client(corev1.SchemeGroupVersion, "/api")
	if err != nil {
		return nil, err
	}
	return &API{batch: b, core: c}, nil
}

// FromKubeconfig makes a client from the kubeconfig that KUBECONFIG
// names, else ~/.kube/config, else the pod's in-cluster account, and
// returns it with the namespace of the config's current context.
func FromKubeconfig() (*API, string, error) {
	cc := clientcmd.NewNonInteractiveDeferredLoadingClientConfig(clientcmd.NewDefaultClientConfigLoadingRules(), &clientcmd.ConfigOverrides{})
	cfg, err := cc.ClientConfig()
	if clientcmd.IsEmptyConfig(err) {
		return nil, "", errors.New("no kubeconfig: set KUBECONFIG, write ~/.kube/config, or run the driver in a pod")
	}
	if err != nil {
		return nil, "", fmt.Errorf("kubeconfig: %w", err)
	}
	ns, _, err := cc.Namespace()
	if err != nil {
		return nil, "", fmt.Errorf("kubeconfig: %w", err)
	}
	// The driver reads its Job a few times a second; client-go's default
	// of 5 requests a second would hold up the deletions at the end.
	if cfg.QPS == 0 {
		cfg.QPS, cfg.Burst = 20, 40
	}
	api, err := NewAPI(cfg)
	if err != nil {
		return nil, "", err
	}
	return api, ns, nil
}

func (a *API) createJob(ctx context.Context, j *batchv1.Job) error {
	return a.batch.Post().Namespace(j.Namespace).Resource("jobs").Body(j).Do(ctx).Error()
}

// getJob returns the Job's error only (the caller asks whether it is
// still there).
func (a *API) getJob(ctx context.Context, ns, name string) error {
	return a.batch.Get().Namespace(ns).Resource("jobs").Name(name).Do(ctx).Into(&batchv1.Job{})
}

func (a *API) deleteJob(ctx context.Context, ns, name string, opts *metav1.DeleteOptions) error {
	return a.batch.Delete().Namespace(ns).Resource("jobs").Name(name).Body(opts).Do(ctx).Error()
}

func (a *API) listPods(ctx context.Context, ns, selector string) (*corev1.PodList, error) {
	var pods corev1.PodList
	err := a.core.Get().Namespace(ns).Resource("pods").Param("labelSelector", selector).Do(ctx).Into(&pods)
	return &pods, err
}

// podLog is the last lines a pod's container logged.
func (a *API) podLog(ctx context.Context, ns, pod, container string, lines int) ([]byte, error) {
	return a.core.Get().Namespace(ns).Resource("pods").Name(pod).SubResource("log").
		Param("container", container).Param("tailLines", strconv.Itoa(lines)).DoRaw(ctx)
}

// Job is the Indexed Job that runs a.
func (k *Executor) Job(a fanout.PhaseRun) (*batchv1.Job, error) {
	if k.Image == "" {
		return nil, errors.New("the Kubernetes executor needs an image (--image)")
	}
	argv := k.Command
	if len(argv) == 0 {
		argv = []string{"sluice", "worker"}
	}
	argv = append(append([]string(nil), argv...), a.Args()...)
	labels := map[string]string{
		"app.kubernetes.io/name":       "sluice",
		"app.kubernetes.io/component":  "worker",
		"app.kubernetes.io/managed-by": "sluice",
		LabelJob:                       a.Job,
		LabelPhase:                     strconv.Itoa(a.Phase),
	}
	res := corev1.ResourceRequirements{}
	for _, q := range []struct {
		name corev1.ResourceName
		v    string
		flag string
	}{{corev1.ResourceCPU, k.CPU, "--cpu"}, {corev1.ResourceMemory, k.Mem, "--mem"}} {
		if q.v == "" {
			continue
		}
		v, err := resource.ParseQuantity(q.v)
		if err != nil {
			return nil, fmt.Errorf("%s %q: %v", q.flag, q.v, err)
		}
		if res.Requests == nil {
			res.Requests, res.Limits = corev1.ResourceList{}, corev1.ResourceList{}
		}
		res.Requests[q.name], res.Limits[q.name] = v, v
	}
	env := append([]corev1.EnvVar{{
		// Each pod labels its attempt's records with its own name.
		Name: "SLUICE_ATTEMPT", ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: "metadata.name"}},
	}}, k.Env...)
	var envFrom []corev1.EnvFromSource
	if k.Secret != "" {
		envFrom = []corev1.EnvFromSource{{SecretRef: &corev1.SecretEnvSource{LocalObjectReference: corev1.LocalObjectReference{Name: k.Secret}}}}
	}
	ttl := k.TTL
	if ttl <= 0 {
		ttl = time.Hour
	}
	var deadline *int64
	switch {
	case k.Deadline == 0:
		deadline = ptr(int64(DefaultDeadline / time.Second))
	case k.Deadline > 0:
		deadline = ptr(int64(max(k.Deadline, time.Second) / time.Second))
	}
	indexed := batchv1.IndexedCompletion
	replace := batchv1.Failed
	job := &batchv1.Job{
		TypeMeta:   metav1.TypeMeta{APIVersion: "batch/v1", Kind: "Job"},
		ObjectMeta: metav1.ObjectMeta{Name: a.Name(), Namespace: k.Namespace, Labels: labels},
		Spec: batchv1.JobSpec{
			CompletionMode:          &indexed,
			Completions:             ptr(int32(a.Tasks)),
			Parallelism:             ptr(int32(max(1, min(a.Workers, a.Tasks)))),
			BackoffLimitPerIndex:    ptr(int32(max(a.Attempts, 1) - 1)),
			MaxFailedIndexes:        ptr(int32(0)),
			PodReplacementPolicy:    &replace,
			ActiveDeadlineSeconds:   deadline,
			TTLSecondsAfterFinished: ptr(int32(ttl / time.Second)),
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec: corev1.PodSpec{
					RestartPolicy:                corev1.RestartPolicyNever,
					ServiceAccountName:           k.ServiceAccount,
					AutomountServiceAccountToken: ptr(k.ServiceAccount != ""),
					Containers: []corev1.Container{{
						Name:    "worker",
						Image:   k.Image,
						Command: argv,
						Env:     env,
						EnvFrom: envFrom,
						// The failed worker's last lines reach the driver in the
						// pod's status even when its logs cannot be read.
						TerminationMessagePolicy: corev1.TerminationMessageFallbackToLogsOnError,
						Resources:                res,
					}},
				},
			},
		},
	}
	if k.Namespace == "" {
		job.Namespace = "default"
	}
	return job, nil
}

func ptr[T any](v T) *T { return &v }

// Manifest is the Job of a as YAML.
func (k *Executor) Manifest(a fanout.PhaseRun) ([]byte, error) {
	job, err := k.Job(a)
	if err != nil {
		return nil, err
	}
	b, err := yaml.Marshal(job)
	if err != nil {
		return nil, err
	}
	// Status is the server's to fill.
	b = bytes.Replace(b, []byte("status: {}\n"), nil, 1)
	return append([]byte(fmt.Sprintf("# phase %d (%s): %d task(s)\n", a.Phase, a.Kind, a.Tasks)), b...), nil
}

// RunPhase creates the phase's Job, follows it until it completes or
// fails, and deletes it with its pods.
func (k *Executor) RunPhase(ctx context.Context, a fanout.PhaseRun) (err error) {
	job, err := k.Job(a)
	if err != nil {
		return err
	}
	if err := k.Client.createJob(ctx, job); err != nil {
		return fmt.Errorf("create Job %s/%s: %w", job.Namespace, job.Name, err)
	}
	defer func() {
		if derr := k.delete(job.Name); err == nil {
			err = derr
		}
	}()
	// Follow the Job through a watch (an informer, so a broken watch is
	// resumed) until it completes or fails.
	lw := cache.NewListWatchFromClient(k.Client.batch, "jobs", job.Namespace, fields.OneTermEqualSelector("metadata.name", job.Name))
	var failed error
	_, werr := watchtools.UntilWithSync(ctx, lw, &batchv1.Job{}, nil, func(ev watch.Event) (bool, error) {
		if ev.Type == watch.Deleted {
			return false, fmt.Errorf("Job %s/%s was deleted while it ran", job.Namespace, job.Name)
		}
		j, ok := ev.Object.(*batchv1.Job)
		if !ok {
			return false, nil
		}
		st := j.Status
		if a.Progress != nil {
			a.Progress(fanout.Progress{Phase: a.Kind, Tasks: a.Tasks, Done: countIndexes(st.CompletedIndexes), Running: int(st.Active), Failed: int(st.Failed)})
		}
		for _, c := range st.Conditions {
			if c.Status != corev1.ConditionTrue {
				continue
			}
			switch c.Type {
			case batchv1.JobComplete:
				return true, nil
			case batchv1.JobFailed:
				failed = k.failure(ctx, j, a, c)
				return true, nil
			}
		}
		return false, nil
	})
	if ctx.Err() != nil {
		return context.Cause(ctx)
	}
	if werr != nil {
		return fmt.Errorf("watch Job %s/%s: %w", job.Namespace, job.Name, werr)
	}
	return failed
}

// failure is the error of a failed Job: its first failed index with the
// last lines its last pod logged.
func (k *Executor) failure(ctx context.Context, j *batchv1.Job, a fanout.PhaseRun, c batchv1.JobCondition) error {
	failed := ""
	if j.Status.FailedIndexes != nil {
		failed = *j.Status.FailedIndexes
	}
	first := firstIndex(failed)
	if first < 0 {
		return fmt.Errorf("Job %s/%s failed (%s): %s", j.Namespace, j.Name, c.Reason, c.Message)
	}
	te := &fanout.TaskError{Task: first, Worker: "Job " + j.Name, Attempts: max(a.Attempts, 1)}
	pods, err := k.Client.listPods(ctx, j.Namespace,
		fmt.Sprintf("%s=%s,%s=%d,batch.kubernetes.io/job-completion-index=%d", LabelJob, a.Job, LabelPhase, a.Phase, first))
	if err != nil || len(pods.Items) == 0 {
		te.Err = fmt.Sprintf("index %d failed (%s); its pods are gone", first, c.Reason)
		return te
	}
	sort.Slice(pods.Items, func(x, y int) bool {
		return pods.Items[x].CreationTimestamp.Before(&pods.Items[y].CreationTimestamp)
	})
	p := pods.Items[len(pods.Items)-1]
	te.Worker = "pod " + p.Name
	te.Err = k.lastLines(ctx, &p)
	return te
}

// lastLines is the last lines a pod's worker logged, read from its log,
// or from its termination message when the log cannot be read.
func (k *Executor) lastLines(ctx context.Context, p *corev1.Pod) string {
	msg, code := "", int32(0)
	for _, cs := range p.Status.ContainerStatuses {
		if t := cs.State.Terminated; t != nil {
			msg, code = t.Message, t.ExitCode
		}
	}
	lctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	if b, err := k.Client.podLog(lctx, p.Namespace, p.Name, "worker", 3); err == nil && len(bytes.TrimSpace(b)) > 0 {
		msg = string(b)
	}
	out := fanout.LastLines(msg, 3)
	if code != 0 {
		out = fmt.Sprintf("exit code %d: %s", code, out)
	}
	return out
}

// firstIndex is the first index of a list such as "3,5-7", or -1.
func firstIndex(list string) int {
	s, _, _ := strings.Cut(list, ",")
	s, _, _ = strings.Cut(s, "-")
	n, err := strconv.Atoi(strings.TrimSpace(s))
	if err != nil {
		return -1
	}
	return n
}

// countIndexes counts the indexes of a list such as "0-3,5".
func countIndexes(list string) int {
	n := 0
	for _, r := range strings.Split(list, ",") {
		lo, hi, isRange := strings.Cut(r, "-")
		a, err := strconv.Atoi(lo)
		if err != nil {
			continue
		}
		if !isRange {
			n++
			continue
		}
		if b, err := strconv.Atoi(hi); err == nil && b >= a {
			n += b - a + 1
		}
	}
	return n
}

// delete deletes a Job with its pods (foreground: the pods go first) and
// waits, up to two minutes, until neither is left.
func (k *Executor) delete(name string) error {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	ns := k.Namespace
	if ns == "" {
		ns = "default"
	}
	fg := metav1.DeletePropagationForeground
	err := k.Client.deleteJob(ctx, ns, name, &metav1.DeleteOptions{PropagationPolicy: &fg})
	if err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("delete Job %s/%s: %w", ns, name, err)
	}
	for {
		jerr := k.Client.getJob(ctx, ns, name)
		pods, perr := k.Client.listPods(ctx, ns, "batch.kubernetes.io/job-name="+name)
		if apierrors.IsNotFound(jerr) && perr == nil && len(pods.Items) == 0 {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("Job %s/%s: its pods still there two minutes after its deletion", ns, name)
		case <-time.After(200 * time.Millisecond):
		}
	}
}

// Every phase can be shown before it is submitted (sluice run --dry-run).
var _ fanout.Manifester = (*Executor)(nil)
