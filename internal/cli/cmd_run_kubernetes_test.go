package cli

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clientset "k8s.io/client-go/kubernetes"
	"sigs.k8s.io/yaml"

	"github.com/sluice-data/sluice/fanout/kubernetes"
	"github.com/sluice-data/sluice/internal/testenv"
	"github.com/sluice-data/sluice/internal/testkubelet"
)

// kubeEnv is a namespace of the control plane that ./scripts/test starts
// (SLUICE_TEST_KUBECONFIG), with a test kubelet that runs the pods as
// processes of this machine, sluice-full (beside this test's sluice) being the program.
type kubeEnv struct {
	cs         clientset.Interface
	kubeconfig string
	ns         string
}

// needKube skips a test without a control plane (failing under CI); else
// it makes a namespace and starts a node, both gone at the test's end.
func needKube(t *testing.T) *kubeEnv {
	t.Helper()
	kc := os.Getenv("SLUICE_TEST_KUBECONFIG")
	if kc == "" {
		testenv.Unavailable(t, "SLUICE_TEST_KUBECONFIG not set; ./scripts/test starts a control plane (scripts/k8s-up) and runs these under CI or with SLUICE_TEST_K8S=1")
	}
	cs, ns := testkubelet.ForTest(t, kc, "sluice-test-", testkubelet.Options{Path: []string{filepath.Dir(sluiceBin)}, Logf: t.Logf})
	return &kubeEnv{cs: cs, kubeconfig: kc, ns: ns}
}

// args are sluice run's flags for this namespace.
func (k *kubeEnv) args() []string {
	return []string{"--executor", "kubernetes", "--image", "sluice:test", "--namespace", k.ns}
}

func (k *kubeEnv) env() []string { return []string{"KUBECONFIG=" + k.kubeconfig} }

// left lists the Jobs and pods of sluice jobs left in the namespace.
func (k *kubeEnv) left(t *testing.T) []string {
	t.Helper()
	ctx := context.Background()
	var names []string
	jobs, err := k.cs.BatchV1().Jobs(k.ns).List(ctx, metav1.ListOptions{LabelSelector: kubernetes.LabelJob})
	if err != nil {
		t.Fatal(err)
	}
	for _, j := range jobs.Items {
		names = append(names, "job/"+j.Name)
	}
	pods, err := k.cs.CoreV1().Pods(k.ns).List(ctx, metav1.ListOptions{LabelSelector: kubernetes.LabelJob})
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range pods.Items {
		names = append(names, "pod/"+p.Name)
	}
	return names
}

// TestRunKubernetesMatchesOneProcess: queries A, B and a shuffle as
// Indexed Jobs on a real control plane give the bytes of one process,
// and leave no Job, pod or object.
func TestRunKubernetesMatchesOneProcess(t *testing.T) {
	k := needKube(t)
	tg := localTarget(t)
	tg.env = k.env()
	for _, q := range []string{"A", "B", "shuffle"} {
		stderr := runBoth(t, tg, q, append(k.args(), "--piece-size", "128KiB")...)
		if !strings.Contains(stderr, "phase 0 (map)") {
			t.Errorf("%s: no map phase in the log: %s", q, stderr)
		}
		if left := tg.left(t); len(left) != 0 {
			t.Fatalf("%s: objects left under %s: %q", q, tg.jobs, left)
		}
		if left := k.left(t); len(left) != 0 {
			t.Fatalf("%s: left in namespace %s: %q", q, k.ns, left)
		}
	}
}

// TestRunKubernetesSecret: against MinIO, the workers get their S3
// credentials from the Secret --secret names (the test kubelet passes
// nothing of this process's environment) and the endpoint from the
// driver's.
func TestRunKubernetesSecret(t *testing.T) {
	k := needKube(t)
	tg := minioTarget(t)
	sec := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "s3-keys"}, StringData: map[string]string{
		"AWS_ACCESS_KEY_ID": os.Getenv("AWS_ACCESS_KEY_ID"), "AWS_SECRET_ACCESS_KEY": os.Getenv("AWS_SECRET_ACCESS_KEY")}}
	if _, err := k.cs.CoreV1().Secrets(k.ns).Create(context.Background(), sec, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	tg.env = append(tg.env, k.env()...)
	// Without the Secret the workers have no credentials.
	r := sluice(t, tg.env, append(append([]string{"run", "--workers", "2", "--attempts", "1", "--store", tg.jobs}, k.args()...), tg.query("A")+" | show")...)
	if r.code != exitError {
		t.Fatalf("without --secret: exit %d, want %d: %s", r.code, exitError, r.stderr)
	}
	runBoth(t, tg, "A", append(k.args(), "--secret", "s3-keys", "--piece-size", "128KiB")...)
	if left := tg.left(t); len(left) != 0 {
		t.Fatalf("objects left under %s: %q", tg.jobs, left)
	}
	if left := k.left(t); len(left) != 0 {
		t.Fatalf("left in namespace %s: %q", k.ns, left)
	}
}

// TestRunKubernetesPodDeleted: a pod deleted mid-task (its process
// killed after writing its output and before committing it) is
// replaced by the Job controller, and the results stay those of one
// process.
func TestRunKubernetesPodDeleted(t *testing.T) {
	k := needKube(t)
	tg := localTarget(t)
	want := sluice(t, nil, "run", tg.query("shuffle")+" | show")
	if want.code != 0 {
		t.Fatal(want.stderr)
	}
	args := append(append([]string{"run", "--workers", "4", "--store", tg.jobs, "--piece-size", "128KiB"}, k.args()...),
		"--x-pause-before-commit", "1s", tg.query("shuffle")+" | show")
	cmd, out, errb := startRun(t, k.env(), args...)
	ctx := context.Background()
	deadline := time.Now().Add(90 * time.Second)
	// The victim is held stopped between its output and its commit; the
	// test kubelet kills a deleted pod's process with SIGKILL, which
	// ends it there.
	w := freezeMidTask(t, tg, 90*time.Second)
	victim, err := k.cs.CoreV1().Pods(k.ns).Get(ctx, w.attempt, metav1.GetOptions{})
	if err != nil {
		t.Fatalf("the pod of worker pid %d: %v", w.pid, err)
	}
	if err := k.cs.CoreV1().Pods(k.ns).Delete(ctx, victim.Name, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	index := victim.Labels[batchv1.JobCompletionIndexAnnotation]
	job := victim.Labels[batchv1.JobNameLabel]
	replaced := false
	for !replaced && time.Now().Before(deadline) {
		pods, err := k.cs.CoreV1().Pods(k.ns).List(ctx, metav1.ListOptions{LabelSelector: batchv1.JobNameLabel + "=" + job + "," + batchv1.JobCompletionIndexAnnotation + "=" + index})
		if err != nil {
			break // the Job may be gone already
		}
		for _, p := range pods.Items {
			replaced = replaced || p.UID != victim.UID
		}
		time.Sleep(50 * time.Millisecond) // polling the API server: the Job controller tells us nothing
	}
	if !replaced {
		t.Fatalf("pod %s (index %s) deleted, no replacement seen", victim.Name, index)
	}
	err = cmd.Wait()
	if err != nil || out.String() != want.stdout {
		t.Fatalf("deleted pod %s: %v: %s\ngot:\n%s\nwant:\n%s", victim.Name, err, errb.String(), out.String(), want.stdout)
	}
	if left := tg.left(t); len(left) != 0 {
		t.Fatalf("objects left: %q", left)
	}
	if left := k.left(t); len(left) != 0 {
		t.Fatalf("left in namespace %s: %q", k.ns, left)
	}
	t.Logf("deleted pod %s of index %s (phase %d) between its output and its commit; replaced, results identical", victim.Name, index, w.phase)
}

// TestRunKubernetesFailingTask: an index that fails every attempt ends
// the job with one line naming the task, its piece, the pod and the
// pod's last log lines, and leaves no Job, pod or object.
func TestRunKubernetesFailingTask(t *testing.T) {
	k := needKube(t)
	stderr := runFailingTask(t, k.env(), k.args(), "on worker pod sluice-", "exit code 1: ", "parquet: ")
	if left := k.left(t); len(left) != 0 {
		t.Fatalf("left in namespace %s: %q", k.ns, left)
	}
	t.Log(stderr)
}

// TestRunKubernetesInterrupt: Ctrl-C at the driver deletes the Job and
// its pods and removes the job's objects.
func TestRunKubernetesInterrupt(t *testing.T) {
	k := needKube(t)
	tg := localTarget(t)
	cmd, _, errb := startRun(t, k.env(), append(append([]string{"run", "--workers", "3", "--store", tg.jobs}, k.args()...),
		"--x-pause-before-commit", "60s", tg.query("A")+" | show")...)
	ctx := context.Background()
	running := false
	// Polling the API server, as above.
	for deadline := time.Now().Add(90 * time.Second); !running && time.Now().Before(deadline); time.Sleep(100 * time.Millisecond) {
		pods, err := k.cs.CoreV1().Pods(k.ns).List(ctx, metav1.ListOptions{LabelSelector: kubernetes.LabelJob})
		if err != nil {
			t.Fatal(err)
		}
		for _, p := range pods.Items {
			running = running || p.Status.Phase == corev1.PodRunning
		}
	}
	if !running {
		t.Fatalf("no pod ran within 90s: %s", errb.String())
	}
	if err := cmd.Process.Signal(syscall.SIGINT); err != nil {
		t.Fatal(err)
	}
	err := cmd.Wait()
	if code := cmd.ProcessState.ExitCode(); code != exitInterrupt {
		t.Fatalf("exit %d (%v), want %d: %s", code, err, exitInterrupt, errb.String())
	}
	if left := k.left(t); len(left) != 0 {
		t.Fatalf("left in namespace %s: %q", k.ns, left)
	}
	if left := tg.left(t); len(left) != 0 {
		t.Fatalf("objects left: %q", left)
	}
}

// TestRunKubernetesDryRun: --dry-run prints a Job per phase that the API
// server accepts in a server-side dry run, with the settings of the
// flags, the first as YAML, the later ones commented out; it creates no
// Job and writes only the job's spec.
func TestRunKubernetesDryRun(t *testing.T) {
	k := needKube(t)
	tg := localTarget(t)
	r := sluice(t, k.env(), append(append([]string{"run", "--workers", "3", "--store", tg.jobs, "--attempts", "4", "--dry-run",
		"--cpu", "500m", "--mem", "1Gi", "--secret", "s3-keys", "--deadline", "10m"}, k.args()...), tg.query("shuffle"))...)
	if r.code != 0 {
		t.Fatalf("exit %d: %s", r.code, r.stderr)
	}
	docs := strings.Split(r.stdout, "\n---\n")
	if len(docs) != 2 {
		t.Fatalf("%d documents, want 2 (map and reduce):\n%s", len(docs), r.stdout)
	}
	for i, d := range docs {
		if i > 0 {
			// Commented out: it needs the driver; uncommented, it is a Job.
			var kept []string
			for _, l := range strings.Split(strings.TrimSuffix(d, "\n"), "\n") {
				if !strings.HasPrefix(l, "# ") {
					t.Fatalf("document %d has a line that is not a comment: %q", i, l)
				}
				kept = append(kept, strings.TrimPrefix(l, "# "))
			}
			d = strings.Join(kept[1:], "\n")
		}
		var job batchv1.Job
		if err := yaml.UnmarshalStrict([]byte(d), &job); err != nil {
			t.Fatalf("document %d: %v\n%s", i, err, d)
		}
		s := job.Spec
		if job.Kind != "Job" || *s.CompletionMode != batchv1.IndexedCompletion || *s.Parallelism != 3 || *s.BackoffLimitPerIndex != 3 ||
			*s.MaxFailedIndexes != 0 || *s.PodReplacementPolicy != batchv1.Failed || *s.ActiveDeadlineSeconds != 600 ||
			s.Template.Spec.Containers[0].Resources.Limits.Cpu().String() != "500m" || s.Template.Spec.Containers[0].EnvFrom[0].SecretRef.Name != "s3-keys" {
			t.Fatalf("document %d is not the Job the flags ask for:\n%s", i, d)
		}
		job.Namespace = k.ns
		got, err := k.cs.BatchV1().Jobs(k.ns).Create(context.Background(), &job, metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
		if err != nil {
			t.Fatalf("server-side dry run of document %d: %v\n%s", i, err, d)
		}
		if *got.Spec.Completions != *s.Completions || !bytes.Contains([]byte(d), []byte("sluice.dev/phase: \""+fmt.Sprint(i)+"\"")) {
			t.Fatalf("document %d: completions %d after the dry run, want %d", i, *got.Spec.Completions, *s.Completions)
		}
	}
	if left := k.left(t); len(left) != 0 {
		t.Fatalf("the dry run left %q", left)
	}
	if left := tg.left(t); len(left) != 1 || !strings.HasSuffix(left[0], "/job.json") {
		t.Fatalf("the dry run wrote %q, want the job's spec alone", left)
	}
}

// TestRunKubernetesDryRunApplied: the Job --dry-run prints, created as
// printed (no server-side dry run), runs every task of its phase to
// completion on the test kubelet: each leaves its done record beside the
// spec the dry run wrote.
func TestRunKubernetesDryRunApplied(t *testing.T) {
	k := needKube(t)
	tg := localTarget(t)
	r := sluice(t, k.env(), append(append([]string{"run", "--workers", "2", "--store", tg.jobs, "--piece-size", "128KiB", "--dry-run"},
		k.args()...), tg.query("A")+" | show")...)
	if r.code != 0 {
		t.Fatalf("exit %d: %s", r.code, r.stderr)
	}
	doc, _, _ := strings.Cut(r.stdout, "\n---\n")
	var job batchv1.Job
	if err := yaml.UnmarshalStrict([]byte(doc), &job); err != nil {
		t.Fatalf("%v\n%s", err, doc)
	}
	if *job.Spec.Completions < 2 {
		t.Fatalf("%d task(s); want a few to see them run:\n%s", *job.Spec.Completions, doc)
	}
	ctx := context.Background()
	jobs := k.cs.BatchV1().Jobs(k.ns)
	if _, err := jobs.Create(ctx, &job, metav1.CreateOptions{}); err != nil {
		t.Fatalf("create the printed Job: %v\n%s", err, doc)
	}
	fg := metav1.DeletePropagationForeground
	defer jobs.Delete(ctx, job.Name, metav1.DeleteOptions{PropagationPolicy: &fg})
	var st batchv1.JobStatus
	// Polling the API server, as above.
	for deadline := time.Now().Add(3 * time.Minute); time.Now().Before(deadline); time.Sleep(200 * time.Millisecond) {
		j, err := jobs.Get(ctx, job.Name, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		st = j.Status
		if st.Succeeded == *job.Spec.Completions || st.Failed > 0 {
			break
		}
	}
	if st.Succeeded != *job.Spec.Completions || st.Failed != 0 {
		t.Fatalf("the printed Job: %d of %d succeeded, %d failed (%+v); %s", st.Succeeded, *job.Spec.Completions, st.Failed, st.Conditions, r.stderr)
	}
	done := 0
	for _, key := range tg.left(t) {
		if strings.Contains(key, "/done/") || strings.HasSuffix(key, ".done.json") {
			done++
		}
	}
	t.Logf("applied Job %s: %d task(s) succeeded; the job's objects: %q", job.Name, st.Succeeded, tg.left(t))
	if done != int(*job.Spec.Completions) {
		t.Fatalf("%d done records for %d tasks: %q", done, *job.Spec.Completions, tg.left(t))
	}
}
