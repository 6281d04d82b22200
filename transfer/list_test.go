package transfer_test

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/sluice-data/sluice/store"
	"github.com/sluice-data/sluice/transfer"
)

// TestList: a level, a recursive listing, a glob, and what is not found.
func TestList(t *testing.T) {
	st := removeFixture(t, "t/a.parquet", "t/b.parquet", "t/sub/c.parquet", "u")
	l, err := transfer.List(t.Context(), st, "t", false)
	if err != nil || l.Dir != "t/" || len(l.Objects) != 2 || strings.Join(l.Prefixes, ",") != "sub/" {
		t.Errorf("List(t) = %+v, %v", l, err)
	}
	l, err = transfer.List(t.Context(), st, "t/", true)
	if err != nil || len(l.Objects) != 3 || len(l.Prefixes) != 0 {
		t.Errorf("List(t/, recursive) = %+v, %v", l, err)
	}
	for key, words := range map[string]string{
		"nope":       "not found: no object or prefix of this name",
		"t/*.csv":    "not found: no object matches",
		"t/sub/zzz/": "not found: no object or prefix of this name",
	} {
		_, err := transfer.List(t.Context(), st, key, false)
		if !errors.Is(err, store.ErrNotFound) || !strings.Contains(err.Error(), words) || !strings.Contains(err.Error(), st.URL(key)) {
			t.Errorf("List(%q): %v, want not found saying %q", key, err, words)
		}
	}
}

// An empty directory lists nothing and is no error; one that does not
// exist is not found, even named with its slash.
func TestListEmptyAndMissingDirectory(t *testing.T) {
	dir := t.TempDir()
	for url, found := range map[string]bool{"file://" + dir + "/": true, "file://" + dir + "/missing/": false} {
		st, key, err := store.Open(t.Context(), url, store.Options{})
		if err != nil {
			t.Fatal(err)
		}
		l, err := transfer.List(t.Context(), st, key, false)
		st.Close()
		switch {
		case found && (err != nil || len(l.Objects)+len(l.Prefixes) != 0):
			t.Errorf("%s: %+v, %v; want nothing and no error", url, l, err)
		case !found && !errors.Is(err, store.ErrNotFound):
			t.Errorf("%s: %v, want not found", url, err)
		}
	}
}

func TestWriteListing(t *testing.T) {
	when := time.Date(2026, 3, 4, 5, 6, 7, 0, time.Local)
	l := store.Level{
		Dir:      "t/",
		Prefixes: []string{"sub/", "x/"},
		Objects: []store.ObjectInfo{
			{Key: "t/a.parquet", Size: 1536, ModTime: when, ETag: `"e1"`},
			{Key: "t/b", Size: 1, ModTime: when, ETag: `"e2"`},
		},
	}
	var b strings.Builder
	if err := transfer.WriteListing(&b, l, transfer.ListingOptions{}); err != nil {
		t.Fatal(err)
	}
	want := `                           PRE sub/
                           PRE x/
2026-03-04 05:06:07       1536 a.parquet
2026-03-04 05:06:07          1 b
2 objects, 1537 bytes (1.5 KiB); 2 prefixes (--recursive lists them)
`
	if b.String() != want {
		t.Errorf("listing:\n%s\nwant:\n%s", b.String(), want)
	}

	b.Reset()
	one := store.Level{Dir: "t/", Objects: l.Objects[1:]}
	if err := transfer.WriteListing(&b, one, transfer.ListingOptions{ETags: true, Human: true}); err != nil {
		t.Fatal(err)
	}
	if want := "2026-03-04 05:06:07        1 B \"e2\" b\n1 object, 1 byte (1 B)\n"; b.String() != want {
		t.Errorf("listing with ETags and human sizes: %q, want %q", b.String(), want)
	}
}

type failingWriter struct{ n int }

func (f *failingWriter) Write(p []byte) (int, error) {
	f.n++
	return 0, errors.New("disk full")
}

// A writer that fails fails the listing, after one write.
func TestWriteListingWriteError(t *testing.T) {
	w := &failingWriter{}
	l := store.Level{Prefixes: []string{"a/", "b/"}}
	if err := transfer.WriteListing(w, l, transfer.ListingOptions{}); err == nil || w.n != 1 {
		t.Errorf("WriteListing: %v after %d writes, want the writer's error after one", err, w.n)
	}
}
