package cli

import (
	"sort"
	"strings"
	"testing"
)

func TestRm(t *testing.T) {
	src, files := catFixture(t)
	forEachS3(t, func(t *testing.T, tg s3Target) {
		if r := sluice(t, tg.env, "cp", "-q", src+"/", tg.url("t/")); r.code != 0 {
			t.Fatalf("cp: exit %d: %s", r.code, r.stderr)
		}
		count := func() int {
			t.Helper()
			r := sluice(t, tg.env, "ls", "--recursive", tg.url(""))
			if r.code != 0 {
				t.Fatalf("ls: exit %d: %s", r.code, r.stderr)
			}
			_, objs, _ := lsNames(t, r.stdout)
			return len(objs)
		}

		// A prefix without --recursive is refused, and nothing goes.
		for _, u := range []string{tg.url("t/d/"), tg.url("t/d")} {
			assertCleanFailure(t, sluice(t, tg.env, "rm", u), exitUsage, "--recursive")
		}
		// --dryrun says what it would delete, and deletes nothing.
		r := sluice(t, tg.env, "rm", "--recursive", "--dryrun", tg.url("t/d"))
		lines := strings.Split(strings.TrimSpace(r.stdout), "\n")
		sort.Strings(lines)
		want := []string{
			"(dryrun) delete: " + tg.url("t/d/a.txt"),
			"(dryrun) delete: " + tg.url("t/d/sub/b.txt"),
			"(dryrun) delete: " + tg.url("t/d/sub/c.bin"),
			"(dryrun) delete: " + tg.url("t/d/z-empty.txt"),
		}
		if r.code != 0 || strings.Join(lines, "\n") != strings.Join(want, "\n") {
			t.Errorf("--dryrun: exit %d, %q (%s)", r.code, r.stdout, r.stderr)
		}
		if n := count(); n != len(files) {
			t.Fatalf("%d objects after a dry run, want %d", n, len(files))
		}

		// One object.
		r = sluice(t, tg.env, "rm", tg.url("t/small.txt"))
		if r.code != 0 || r.stdout != "delete: "+tg.url("t/small.txt")+"\n" {
			t.Errorf("rm one: exit %d, %q (%s)", r.code, r.stdout, r.stderr)
		}
		assertCleanFailure(t, sluice(t, tg.env, "rm", tg.url("t/small.txt")), exitNotFound, "no such object")

		// A prefix written without its slash: what is under it, never a
		// sibling that only starts with the same letters.
		if r := sluice(t, tg.env, "cp", "-q", src+"/small.txt", tg.url("t/d-sibling")); r.code != 0 {
			t.Fatal(r.stderr)
		}
		r = sluice(t, tg.env, "rm", "-r", tg.url("t/d"))
		if r.code != 0 || strings.Count(r.stdout, "delete: ") != 4 {
			t.Errorf("rm -r: exit %d, %q (%s)", r.code, r.stdout, r.stderr)
		}
		if n := count(); n != len(files)-1-4+1 {
			t.Errorf("%d objects left, want %d", n, len(files)-1-4+1)
		}
		assertCleanFailure(t, sluice(t, tg.env, "ls", tg.url("t/d/")), exitNotFound, "not found")
		assertCleanFailure(t, sluice(t, tg.env, "rm", "-r", tg.url("t/d/")), exitNotFound, "no objects")

		// The whole bucket.
		if r := sluice(t, tg.env, "rm", "-r", "-q", tg.url("")); r.code != 0 || r.stdout != "" {
			t.Errorf("rm -r bucket: exit %d, %q (%s)", r.code, r.stdout, r.stderr)
		}
		if n := count(); n != 0 {
			t.Errorf("%d objects left in the bucket", n)
		}
	})
}

func TestRmDirectory(t *testing.T) {
	src, _ := catFixture(t)
	r := sluice(t, nil, "rm", "-r", src+"/d")
	if r.code != 0 || strings.Count(r.stdout, "delete: file://") != 4 {
		t.Fatalf("exit %d, %q (%s)", r.code, r.stdout, r.stderr)
	}
	r = sluice(t, nil, "ls", "-r", src)
	if _, objs, _ := lsNames(t, r.stdout); len(objs) != 3 {
		t.Errorf("left %v, want big.bin, small.txt and empty", objs)
	}
	assertCleanFailure(t, sluice(t, nil, "rm", "-r", src+"/*"), exitUsage, "glob")
}

func TestMb(t *testing.T) {
	forEachS3(t, func(t *testing.T, tg s3Target) {
		// forEachS3 made tg.bucket with mb; it is there, and empty.
		if r := sluice(t, tg.env, "ls", tg.url("")); r.code != 0 || !strings.HasPrefix(r.stdout, "0 objects") {
			t.Errorf("ls of the new bucket: exit %d, %q (%s)", r.code, r.stdout, r.stderr)
		}
		assertCleanFailure(t, sluice(t, tg.env, "mb", "s3://"+tg.bucket), exitError, "already exists")
		assertCleanFailure(t, sluice(t, tg.env, "mb", tg.url("key")), exitUsage, "names a key")
		assertCleanFailure(t, sluice(t, tg.env, "mb", t.TempDir()), exitUsage, "only s3://")
		assertCleanFailure(t, sluice(t, tg.env, "mb", "s3://Bad_Name"), exitUsage, "not valid")
	})
}
