package slurm

import (
	"fmt"
	"strings"
	"testing"

	"github.com/sluice-data/sluice/fanout"
)

func TestIndexList(t *testing.T) {
	for _, c := range []struct {
		idx  []int
		want string
	}{
		{nil, ""},
		{[]int{0}, "0"},
		{[]int{0, 1, 2, 3, 5, 7, 8, 9}, "0-3,5,7-9"},
		{[]int{2, 4, 6}, "2,4,6"},
	} {
		if got := indexList(c.idx); got != c.want {
			t.Errorf("indexList(%v) = %q, want %q", c.idx, got, c.want)
		}
	}
}

// FuzzIndexList: any ascending, distinct indexes are written as a list
// whose numbers, ranges expanded, are those indexes.
func FuzzIndexList(f *testing.F) {
	for _, s := range []string{"", "\x00\x01\x02\x05", "\x07", "\x00\x02\x04"} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		var idx []int
		seen := map[int]bool{}
		for i := range 256 {
			if strings.IndexByte(string(b), byte(i)) >= 0 && !seen[i] {
				seen[i] = true
				idx = append(idx, i)
			}
		}
		list := indexList(idx)
		n := 0
		if list != "" {
			for _, r := range strings.Split(list, ",") {
				var lo, hi int
				if k, _ := fmt.Sscanf(r, "%d-%d", &lo, &hi); k == 2 {
					n += hi - lo + 1
				} else {
					n++
				}
			}
		}
		if n != len(idx) || strings.Contains(list, " ") {
			t.Fatalf("indexList(%v) = %q holds %d indexes", idx, list, n)
		}
	})
}

// A Manifest's sbatch line is a comment; Runnable makes it the command,
// the batch script its here-document, and changes nothing else.
func TestRunnable(t *testing.T) {
	s := New([]string{"/opt/sluice", "worker"})
	m, err := s.Manifest(fanout.PhaseRun{Job: "job-ab12", Spec: "file:///j/job-ab12/job.json", Phase: 0, Kind: "map", Tasks: 3, Workers: 2})
	if err != nil {
		t.Fatal(err)
	}
	r := string(Runnable(m))
	lines := strings.Split(r, "\n")
	if len(lines) < 3 || lines[0] != "# phase 0 (map): 3 task(s)" || !strings.HasPrefix(lines[1], "sbatch '--parsable' ") || !strings.HasSuffix(lines[1], " <<'EOF'") {
		t.Fatalf("Runnable:\n%s", r)
	}
	if strings.Replace(r, "\nsbatch ", "\n# sbatch ", 1) != string(m) {
		t.Errorf("more than the sbatch line changed:\n%s\nfrom:\n%s", r, m)
	}
	if !strings.Contains(r, "exec '/opt/sluice' 'worker' 'file:///j/job-ab12/job.json' '--phase' '0'\nEOF\n") {
		t.Errorf("the script is not its here-document:\n%s", r)
	}
}
