package kubernetes

import (
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/sluice-data/sluice/fanout"
	corev1 "k8s.io/api/core/v1"
)

func TestIndexes(t *testing.T) {
	for _, c := range []struct {
		list         string
		count, first int
	}{
		{"", 0, -1},
		{"0", 1, 0},
		{"0-3,5,7-9", 8, 0},
		{"2,4,6", 3, 2},
		{"3-5", 3, 3},
	} {
		if n := countIndexes(c.list); n != c.count {
			t.Errorf("countIndexes(%q) = %d, want %d", c.list, n, c.count)
		}
		if i := firstIndex(c.list); i != c.first {
			t.Errorf("firstIndex(%q) = %d, want %d", c.list, i, c.first)
		}
	}
}

// FuzzJobIndexes: any completedIndexes or failedIndexes string the API
// server sends is counted without a panic, and a list of single indexes
// reads back as those.
func FuzzJobIndexes(f *testing.F) {
	for _, s := range []string{"0-3,5", "", "7", "1-0", "-", ",,", "3-x,4", "99999999999999999999"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if n := countIndexes(s); n < 0 {
			t.Fatalf("countIndexes(%q) = %d", s, n)
		}
		firstIndex(s)
		var idx []string
		for _, b := range []byte(s) {
			idx = append(idx, strconv.Itoa(int(b)))
		}
		list := strings.Join(idx, ",")
		if countIndexes(list) != len(idx) || (len(idx) > 0 && strconv.Itoa(firstIndex(list)) != idx[0]) {
			t.Fatalf("%q reads back as %d indexes from %d", list, countIndexes(list), firstIndex(list))
		}
	})
}

// The store's variables set here go to the workers with their values
// here, those unset do not, and the extra pairs follow.
func TestWorkerEnv(t *testing.T) {
	t.Setenv("AWS_ENDPOINT_URL", "http://10.0.0.1:9000")
	t.Setenv("AWS_REGION", "eu-west-1")
	t.Setenv("AWS_SECRET_ACCESS_KEY", "not for the pods' spec")
	for _, name := range []string{"AWS_ENDPOINT_URL_S3", "AWS_DEFAULT_REGION"} {
		t.Setenv(name, "")
		os.Unsetenv(name)
	}
	got := WorkerEnv([]string{"SLUICE_X=1", "EMPTY=", "A=b=c"})
	want := []corev1.EnvVar{
		{Name: "AWS_ENDPOINT_URL", Value: "http://10.0.0.1:9000"}, {Name: "AWS_REGION", Value: "eu-west-1"},
		{Name: "SLUICE_X", Value: "1"}, {Name: "EMPTY", Value: ""}, {Name: "A", Value: "b=c"},
	}
	if !slices.Equal(got, want) {
		t.Errorf("WorkerEnv = %v, want %v", got, want)
	}
}

// A phase's Job ends by a deadline, a day unless told: a Job whose driver
// died does not run on for ever.
func TestJobDeadline(t *testing.T) {
	for _, c := range []struct {
		deadline time.Duration
		want     int64 // 0: none
	}{{0, 86400}, {90 * time.Second, 90}, {-1, 0}} {
		k := &Executor{Image: "img", Deadline: c.deadline}
		j, err := k.Job(fanout.PhaseRun{Job: "job-0123456789ab", Spec: "s3://b/j/job.json", Kind: fanout.PhaseMap, Tasks: 2, Workers: 2, Attempts: 1})
		if err != nil {
			t.Fatal(err)
		}
		got := j.Spec.ActiveDeadlineSeconds
		if (c.want == 0) != (got == nil) || got != nil && *got != c.want {
			t.Errorf("Deadline %v: activeDeadlineSeconds %v, want %d", c.deadline, got, c.want)
		}
	}
}
