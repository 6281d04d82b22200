package cli

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/sluice-data/sluice/internal/await"
)

// A copy killed mid-upload (SIGKILL: no chance to abort) leaves a pending
// multipart upload and no object; `sluice uploads` lists it and --abort
// removes it. Ctrl-C instead leaves nothing to clean up.
func TestUploadsOrphanCleanup(t *testing.T) {
	src, _ := catFixture(t)
	big := filepath.Join(src, "big.bin") // 17 MiB: a multipart upload
	forEachS3(t, func(t *testing.T, tg s3Target) {
		uploads := func(args ...string) result {
			t.Helper()
			r := sluice(t, tg.env, append([]string{"uploads"}, args...)...)
			if r.code != 0 {
				t.Fatalf("uploads %v: exit %d: %s", args, r.code, r.stderr)
			}
			return r
		}
		// start copies big.bin at a modelled 4 MiB/s and returns once its
		// multipart upload is pending.
		start := func(key string) *exec.Cmd {
			t.Helper()
			cmd := exec.Command(sluiceBin, "cp", "-q", "--sim", "link=4MiB/s", big, tg.url(key))
			cmd.Env = append(os.Environ(), tg.env...)
			cmd.Stderr = new(bytes.Buffer)
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
			await.Until(t, "the copy's multipart upload", func() bool {
				return strings.Contains(uploads(tg.url(key)).stdout, tg.url(key))
			})
			return cmd
		}

		killed := start("out/killed.bin")
		if err := killed.Process.Kill(); err != nil {
			t.Fatal(err)
		}
		_ = killed.Wait()
		line := regexp.MustCompile(`^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ  ` + regexp.QuoteMeta(tg.url("out/killed.bin")) + `  (\S+)\n$`)
		r := uploads(tg.url("out/"))
		m := line.FindStringSubmatch(r.stdout)
		if m == nil {
			t.Fatalf("uploads after SIGKILL: %q, want one line for out/killed.bin", r.stdout)
		}
		id := m[1]
		assertCleanFailure(t, sluice(t, tg.env, "ls", tg.url("out/killed.bin")), exitNotFound, "not found")

		// Another prefix, and uploads too young for --older-than, are
		// not touched.
		if r := uploads(tg.url("elsewhere/")); r.stdout != "" {
			t.Errorf("uploads under another prefix: %q", r.stdout)
		}
		if r := uploads("--abort", "--older-than", "1h", tg.url("out/")); r.stdout != "" {
			t.Errorf("--older-than 1h aborted a fresh upload: %q", r.stdout)
		}
		// --dryrun says, and aborts nothing.
		want := "abort: " + tg.url("out/killed.bin") + " (" + id + ")\n"
		if r := uploads("--abort", "--dryrun", tg.url("out/")); r.stdout != "(dryrun) "+want {
			t.Errorf("--dryrun: %q, want %q", r.stdout, "(dryrun) "+want)
		}
		if r := uploads(tg.url("out/")); r.stdout == "" {
			t.Fatal("--dryrun aborted the upload")
		}
		if r := uploads("--abort", tg.url("out/")); r.stdout != want {
			t.Errorf("--abort: %q, want %q", r.stdout, want)
		}
		if r := uploads(tg.url("out/")); r.stdout != "" {
			t.Errorf("uploads after --abort: %q", r.stdout)
		}

		// Ctrl-C: the copy aborts its own upload.
		stopped := start("out/interrupted.bin")
		if err := stopped.Process.Signal(os.Interrupt); err != nil {
			t.Fatal(err)
		}
		_ = stopped.Wait()
		if code := stopped.ProcessState.ExitCode(); code != exitInterrupt {
			t.Errorf("cp after Ctrl-C: exit %d, want %d (%s)", code, exitInterrupt, stopped.Stderr)
		}
		await.Until(t, "no pending upload after Ctrl-C", func() bool { return uploads(tg.url("out/")).stdout == "" })
		assertCleanFailure(t, sluice(t, tg.env, "ls", tg.url("out/")), exitNotFound, "not found")
	})
}

func TestUploadsBadUse(t *testing.T) {
	assertCleanFailure(t, sluice(t, nil, "uploads", t.TempDir()+"/"), exitUsage, "only s3://")
	assertCleanFailure(t, sluice(t, nil, "uploads", "--dryrun", "s3://b/p/"), exitUsage, "--dryrun goes with --abort")
	assertCleanFailure(t, sluice(t, nil, "uploads", "--older-than", "-1h", "s3://b/p/"), exitUsage, "negative")
	assertCleanFailure(t, sluice(t, nil, "uploads"), exitUsage, "argument")
}
