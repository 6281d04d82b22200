package cli

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/sluice-data/sluice/internal/s3test"
)

// s3Target is an S3 endpoint the CLI tests reach through the environment,
// and a bucket of their own on it.
type s3Target struct {
	env    []string
	bucket string
}

// forEachS3 runs fn against `sluice server` and, when ./scripts/test
// started one, MinIO (under CI a missing MinIO fails instead of
// skipping). Each run gets a fresh bucket, made with `sluice mb`.
func forEachS3(t *testing.T, fn func(t *testing.T, tg s3Target)) {
	t.Run("embedded", func(t *testing.T) {
		env := startServer(t, t.TempDir())
		fn(t, newBucket(t, env))
	})
	t.Run("minio", func(t *testing.T) {
		fn(t, newBucket(t, []string{"AWS_ENDPOINT_URL=" + s3test.Endpoint(t), "AWS_REGION=us-east-1"}))
	})
}

func newBucket(t *testing.T, env []string) s3Target {
	t.Helper()
	name := fmt.Sprintf("cli-%d", time.Now().UnixNano())
	r := sluice(t, env, "mb", "s3://"+name)
	if r.code != 0 || r.stdout != "make_bucket: s3://"+name+"\n" {
		t.Fatalf("mb: exit %d, stdout %q, stderr %q", r.code, r.stdout, r.stderr)
	}
	return s3Target{env: env, bucket: name}
}

func (tg s3Target) url(key string) string { return "s3://" + tg.bucket + "/" + key }

// lsLine matches an object line: date, time, size, name.
var lsLine = regexp.MustCompile(`^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d +(\S+(?: [KMGTPE]?i?B)?) (\S+)$`)

// lsNames is what an ls printed: PRE names, object names with their
// size column, and the total line.
func lsNames(t *testing.T, out string) (pre []string, objects map[string]string, total string) {
	t.Helper()
	objects = map[string]string{}
	lines := strings.Split(strings.TrimSuffix(out, "\n"), "\n")
	for _, line := range lines[:len(lines)-1] {
		if p, ok := strings.CutPrefix(strings.TrimLeft(line, " "), "PRE "); ok {
			if !strings.HasPrefix(line, strings.Repeat(" ", 27)+"PRE ") {
				t.Errorf("PRE line not aligned as the aws CLI's: %q", line)
			}
			pre = append(pre, p)
			continue
		}
		m := lsLine.FindStringSubmatch(line)
		if m == nil {
			t.Fatalf("not an ls line: %q in\n%s", line, out)
		}
		objects[m[2]] = m[1]
	}
	return pre, objects, lines[len(lines)-1]
}

func TestLs(t *testing.T) {
	src, files := catFixture(t)
	check := func(t *testing.T, env []string, root string) {
		// One level: PRE for the directory, the objects at this level.
		r := sluice(t, env, "ls", root)
		if r.code != 0 {
			t.Fatalf("ls: exit %d: %s", r.code, r.stderr)
		}
		pre, objs, total := lsNames(t, r.stdout)
		if strings.Join(pre, ",") != "d/" || len(objs) != 3 || objs["big.bin"] != fmt.Sprint(len(files["big.bin"])) || objs["empty"] != "0" {
			t.Errorf("one level: PRE %v, objects %v", pre, objs)
		}
		if want := fmt.Sprintf("3 objects, %d bytes", len(files["big.bin"])+len(files["small.txt"])); !strings.HasPrefix(total, want) || !strings.Contains(total, "1 prefix") {
			t.Errorf("total %q, want %q... and 1 prefix", total, want)
		}
		// A prefix written without its slash is listed as a directory.
		r = sluice(t, env, "ls", strings.TrimSuffix(root, "/")+"/d")
		pre, objs, _ = lsNames(t, r.stdout)
		if r.code != 0 || strings.Join(pre, ",") != "sub/" || len(objs) != 2 || objs["a.txt"] == "" {
			t.Errorf("ls d: exit %d, PRE %v, objects %v (%s)", r.code, pre, objs, r.stderr)
		}
		// Everything, by key, and human-readable sizes.
		r = sluice(t, env, "ls", "--recursive", "--human-readable", root)
		pre, objs, total = lsNames(t, r.stdout)
		if r.code != 0 || len(pre) != 0 || len(objs) != len(files) || !strings.HasPrefix(total, "7 objects") {
			t.Errorf("--recursive: exit %d, PRE %v, objects %v, total %q", r.code, pre, objs, total)
		}
		if objs["big.bin"] != "17.0 MiB" || objs["d/sub/c.bin"] != "3.0 MiB" || objs["small.txt"] != "6 B" {
			t.Errorf("--human-readable sizes: %v", objs)
		}
		// A glob lists its matches, as scan takes it.
		r = sluice(t, env, "ls", strings.TrimSuffix(root, "/")+"/d/*/*.bin")
		_, objs, total = lsNames(t, r.stdout)
		if r.code != 0 || len(objs) != 1 || objs["sub/c.bin"] == "" || !strings.HasPrefix(total, "1 object, ") {
			t.Errorf("glob: exit %d, objects %v, total %q (%s)", r.code, objs, total, r.stderr)
		}
		// Nothing there: not found, exit 3, one line.
		assertCleanFailure(t, sluice(t, env, "ls", strings.TrimSuffix(root, "/")+"/nope"), exitNotFound, "not found")
		assertCleanFailure(t, sluice(t, env, "ls", strings.TrimSuffix(root, "/")+"/nope/"), exitNotFound, "not found")
		assertCleanFailure(t, sluice(t, env, "ls", strings.TrimSuffix(root, "/")+"/d/*.parquet"), exitNotFound, "not found")
	}
	t.Run("directory", func(t *testing.T) { check(t, nil, src) })
	forEachS3(t, func(t *testing.T, tg s3Target) {
		if r := sluice(t, tg.env, "cp", "-q", src+"/", tg.url("t/")); r.code != 0 {
			t.Fatalf("cp: exit %d: %s", r.code, r.stderr)
		}
		check(t, tg.env, tg.url("t/"))
		// An empty bucket lists nothing, and that is no error.
		empty := newBucket(t, tg.env)
		if r := sluice(t, tg.env, "ls", empty.url("")); r.code != 0 || r.stdout != "0 objects, 0 bytes (0 B)\n" {
			t.Errorf("empty bucket: exit %d, %q %s", r.code, r.stdout, r.stderr)
		}
	})
	// An empty directory too.
	if r := sluice(t, nil, "ls", t.TempDir()); r.code != 0 || !strings.HasPrefix(r.stdout, "0 objects") {
		t.Errorf("empty directory: exit %d, %q %s", r.code, r.stdout, r.stderr)
	}
}

// sluice's client finds the region of `sluice server` from its answer to a
// request signed for another, as it does with S3: both ways, reads and
// writes.
func TestRegionDiscovery(t *testing.T) {
	src := filepath.Join(t.TempDir(), "a.txt")
	if err := os.WriteFile(src, []byte("hello"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct{ server, client string }{{"us-east-1", "eu-west-1"}, {"eu-west-1", "us-east-1"}} {
		t.Run(c.server, func(t *testing.T) {
			env := startServer(t, t.TempDir(), "--region", c.server)
			if !slices.Contains(env, "AWS_REGION="+c.server) {
				t.Fatalf("the server prints %v, want AWS_REGION=%s", env, c.server)
			}
			if r := sluice(t, env, "cp", "-q", "--region", c.client, src, "s3://bkt/d/a.txt"); r.code != 0 {
				t.Fatalf("cp --region %s: exit %d: %s", c.client, r.code, r.stderr)
			}
			r := sluice(t, env, "ls", "--region", c.client, "s3://bkt/d/")
			if _, objs, _ := lsNames(t, r.stdout); r.code != 0 || objs["a.txt"] != "5" {
				t.Errorf("ls --region %s: exit %d, objects %v (%s)", c.client, r.code, objs, r.stderr)
			}
			// The client's region in the environment, as the aws CLI takes it.
			r = sluice(t, append(env, "AWS_REGION="+c.client), "cat", "s3://bkt/d/a.txt")
			if r.code != 0 || r.stdout != "hello" {
				t.Errorf("cat with AWS_REGION=%s: exit %d, %q (%s)", c.client, r.code, r.stdout, r.stderr)
			}
		})
	}
}

// "s3:/bucket" (one slash) or "s3//bucket" (no colon) is a mistyped URL: a one-line usage error,
// never a local file named "s3:" or an empty listing.
func TestOneSlashURL(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "f.parquet"), []byte("PAR1"), 0o644); err != nil {
		t.Fatal(err)
	}
	env := startServer(t, t.TempDir())
	for _, args := range [][]string{
		{"cp", "f.parquet", "s3:/bkt/x.parquet"},
		{"ls", "s3:/bkt"},
		{"rm", "s3:/bkt/x.parquet"},
		{"cat", "s3:bkt/x.parquet"},
		{"cp", "f.parquet", "s3//bkt/x.parquet"}, // the colon missing
	} {
		r := sluiceIn(t, dir, env, args...)
		assertCleanFailure(t, r, exitUsage, "s3://bkt")
		if !strings.Contains(r.stderr, "not a URL") {
			t.Errorf("%v: %q does not say it is not a URL", args, r.stderr)
		}
	}
	entries, _ := os.ReadDir(dir)
	if len(entries) != 1 {
		t.Errorf("files written by a mistyped URL: %v", entries)
	}
}
