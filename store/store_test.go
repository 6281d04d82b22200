package store_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/sync/errgroup"

	"github.com/sluice-data/sluice/store"
	"github.com/sluice-data/sluice/store/storetest"
)

func TestConformanceMem(t *testing.T) {
	storetest.Run(t, func(t *testing.T) *store.Store {
		return store.New(store.NewMemDriver(), "mem://test/")
	})
}

func TestConformanceFile(t *testing.T) {
	dir := t.TempDir()
	storetest.Run(t, func(t *testing.T) *store.Store {
		st, key, err := store.Open(context.Background(), dir+"/", store.Options{})
		if err != nil || key != "" {
			t.Fatalf("open %s: key %q, %v", dir, key, err)
		}
		return st
	})
	// The suite deletes what it writes; nothing, temp files included, may remain.
	var left []string
	filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if p != dir {
			left = append(left, p)
		}
		return nil
	})
	if len(left) > 0 {
		t.Fatalf("left behind: %v", left)
	}
}

func TestOpenURLs(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "f.parquet"), []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		url, wantURL, wantKey string
	}{
		{dir, "file://" + dir + "/", ""},
		{"file://" + dir + "/f.parquet", "file://" + dir + "/f.parquet", "f.parquet"},
		{dir + "/sub/new", "file://" + dir + "/sub/new", "new"},
		{"mem://b/some/prefix", "mem://b/some/prefix", "some/prefix"},
		// Rooted at / itself: one slash after the scheme's two, not two.
		{"/sluice-no-such-dir", "file:///sluice-no-such-dir", "sluice-no-such-dir"},
		{"/", "file:///", ""},
	}
	for _, c := range cases {
		st, key, err := store.Open(ctx, c.url, store.Options{})
		if err != nil {
			t.Fatalf("open %s: %v", c.url, err)
		}
		if key != c.wantKey || st.URL(key) != c.wantURL {
			t.Errorf("open %s: key %q url %q, want %q %q", c.url, key, st.URL(key), c.wantKey, c.wantURL)
		}
	}
}

// TestMemBuckets: the Opens of one mem:// name with the same MemBuckets
// share objects; with other MemBuckets, or none, they do not.
func TestMemBuckets(t *testing.T) {
	ctx := context.Background()
	open := func(b *store.MemBuckets) *store.Store {
		st, _, err := store.Open(ctx, "mem://shared/", store.Options{MemBuckets: b})
		if err != nil {
			t.Fatal(err)
		}
		return st
	}
	ours := store.NewMemBuckets()
	if _, err := open(ours).Put(ctx, "k", strings.NewReader("v"), store.WriteOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := open(ours).Stat(ctx, "k"); err != nil {
		t.Fatalf("mem stores of one name and one MemBuckets do not share: %v", err)
	}
	for name, b := range map[string]*store.MemBuckets{"other MemBuckets": store.NewMemBuckets(), "no MemBuckets": nil} {
		if _, err := open(b).Stat(ctx, "k"); !errors.Is(err, store.ErrNotFound) {
			t.Errorf("%s: Stat of an object put through another MemBuckets: %v, want not found", name, err)
		}
	}
	st := open(nil)
	if _, err := st.Put(ctx, "k", strings.NewReader("v"), store.WriteOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := st.Stat(ctx, "k"); err != nil {
		t.Fatalf("a mem store with no MemBuckets does not keep its own objects: %v", err)
	}
}

func TestOpenErrors(t *testing.T) {
	ctx := context.Background()
	for _, u := range []string{"", "gs://bucket/x", "s3://", "s3:///key", "mem://", "file://host/x",
		// One slash, or none: a mistyped URL, never a local path.
		"s3:/demo/x.parquet", "s3:demo", "S3:/demo", "mem:/m/k", "file:/tmp/x", "https:/host/x"} {
		_, _, err := store.Open(ctx, u, store.Options{})
		if !errors.Is(err, store.ErrInvalid) {
			t.Errorf("open %q: err = %v, want ErrInvalid", u, err)
			continue
		}
		if strings.Contains(err.Error(), "\n") {
			t.Errorf("open %q: multi-line error %q", u, err)
		}
	}
}

func TestFileKeysCannotEscape(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	root := filepath.Join(dir, "root")
	st, _, err := store.Open(ctx, root+"/", store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := st.Put(ctx, "a/../../outside", strings.NewReader("x"), store.WriteOptions{}); !errors.Is(err, store.ErrInvalid) {
		t.Fatalf("escaping write: %v", err)
	}
	if _, err := os.Stat(filepath.Join(dir, "outside")); err == nil {
		t.Fatal("a key escaped the file root")
	}
	// A symlinked object is followed only for reading what is already inside the root.
	if _, err := st.Put(ctx, "in", strings.NewReader("x"), store.WriteOptions{}); err != nil {
		t.Fatal(err)
	}
}

// A mistyped URL names what to write instead.
func TestOpenOneSlashSaysWhatToWrite(t *testing.T) {
	_, _, err := store.Open(context.Background(), "s3:/demo/x.parquet", store.Options{})
	if err == nil || !strings.Contains(err.Error(), "write s3://demo/x.parquet") {
		t.Fatalf("err %v, want one that says to write s3://demo/x.parquet", err)
	}
	_, _, err = store.Open(context.Background(), "s3//demo/x/", store.Options{})
	if err == nil || !strings.Contains(err.Error(), "write s3://demo/x/") {
		t.Fatalf("err %v, want one that says to write s3://demo/x/", err)
	}
	// A local name with a colon further on is still a path.
	dir := t.TempDir()
	if _, _, err := store.Open(context.Background(), filepath.Join(dir, "a:b"), store.Options{}); err != nil {
		t.Errorf("a path with a colon: %v", err)
	}
}

func TestGlob(t *testing.T) {
	ctx := context.Background()
	st := store.New(store.NewMemDriver(), "mem://glob/")
	for _, k := range []string{"li/a.parquet", "li/b.parquet", "li/b.txt", "li/sub/c.parquet", "lj/d.parquet"} {
		if _, err := st.Put(ctx, k, strings.NewReader("x"), store.WriteOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	for pattern, want := range map[string]string{
		"li/*.parquet":   "li/a.parquet li/b.parquet",
		"l?/*.parquet":   "li/a.parquet li/b.parquet lj/d.parquet",
		"li/*/*.parquet": "li/sub/c.parquet",
		"li/[ab].*":      "li/a.parquet li/b.parquet li/b.txt",
		"zz/*":           "",
	} {
		var got []string
		if err := st.Glob(ctx, pattern, func(o store.ObjectInfo) error { got = append(got, o.Key); return nil }); err != nil {
			t.Fatalf("%s: %v", pattern, err)
		}
		if strings.Join(got, " ") != want {
			t.Errorf("%s: %q, want %q", pattern, got, want)
		}
	}
	if err := st.Glob(ctx, "li/[", func(store.ObjectInfo) error { return nil }); !errors.Is(err, store.ErrInvalid) {
		t.Errorf("bad glob: %v, want ErrInvalid", err)
	}
}

func TestSplitGlob(t *testing.T) {
	for in, want := range map[string][2]string{
		"s3://b/data/*.parquet":   {"s3://b/data/", "*.parquet"},
		"s3://b/data/x.parquet":   {"s3://b/data/x.parquet", ""},
		"./d/year=*/m?/p.parquet": {"./d/", "year=*/m?/p.parquet"},
		"*.parquet":               {"", "*.parquet"},
	} {
		if b, p := store.SplitGlob(in); b != want[0] || p != want[1] {
			t.Errorf("SplitGlob(%q) = %q, %q; want %q, %q", in, b, p, want[0], want[1])
		}
	}
}

// TestFileWritesBesideDeletes: writers of objects in a new directory
// and deleters of the last object of another in the same parent (which
// prune what they leave empty) all succeed: a directory pruned while a
// writer makes the ones below it is made again.
func TestFileWritesBesideDeletes(t *testing.T) {
	ctx := context.Background()
	st, _, err := store.Open(ctx, t.TempDir()+"/", store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	var g errgroup.Group
	for w := range 4 {
		g.Go(func() error {
			for i := range 300 {
				key := fmt.Sprintf("job/p0/%02d/t%d-%d", i%3, w, i)
				if _, err := st.Put(ctx, key, strings.NewReader("x"), store.WriteOptions{}); err != nil {
					return fmt.Errorf("put %s: %w", key, err)
				}
				if err := st.Delete(ctx, key); err != nil {
					return fmt.Errorf("delete %s: %w", key, err)
				}
			}
			return nil
		})
	}
	if err := g.Wait(); err != nil {
		t.Fatal(err)
	}
}
