package iceberg

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/sluice-data/sluice/store"
)

// seeds are files of a table iceberg-go wrote (internal/icebergtest's
// fixture): a metadata file, a manifest list and manifests of data and of
// position deletes.
func seeds(f *testing.F, glob string) [][]byte {
	names, _ := filepath.Glob(filepath.Join("testdata", glob))
	var out [][]byte
	for _, n := range names {
		b, err := os.ReadFile(n)
		if err != nil {
			f.Fatal(err)
		}
		out = append(out, b)
	}
	if len(out) == 0 {
		f.Fatalf("no testdata/%s", glob)
	}
	return out
}

// FuzzMetadata: any bytes as a table's metadata file are a table or an
// error, never a panic; a table's snapshot is one it lists.
func FuzzMetadata(f *testing.F) {
	for _, m := range seeds(f, "*.metadata.json") {
		f.Add(m, int64(0))
	}
	f.Add([]byte(`{"format-version": 1, "schema": {"fields": [{"id": 1, "name": "a", "type": {"type": "struct", "fields": []}}]}, "current-snapshot-id": -1}`), int64(0))
	f.Add([]byte(`{"format-version": 2, "schemas": [], "snapshots": [{"snapshot-id": 3}]}`), int64(3))
	f.Fuzz(func(t *testing.T, b []byte, snapshot int64) {
		ctx := context.Background()
		buckets := store.NewMemBuckets()
		// Only the store the test wrote: paths in the metadata name
		// nothing else.
		open := func(ctx context.Context, url string) (*store.Store, string, error) {
			if !strings.HasPrefix(url, "mem://") {
				return nil, "", &store.Error{Op: "open", URL: url, Kind: store.KindNotFound, Err: os.ErrNotExist}
			}
			return store.Open(ctx, url, store.Options{MemBuckets: buckets})
		}
		st, key, err := open(ctx, "mem://w/t/metadata/v1.metadata.json")
		if err != nil {
			t.Fatal(err)
		}
		if _, err := st.Put(ctx, key, bytes.NewReader(b), store.WriteOptions{}); err != nil {
			t.Fatal(err)
		}
		tbl, err := Open(ctx, open, "mem://w/t/", Options{SnapshotID: snapshot})
		if err != nil {
			return
		}
		if tbl.Schema == nil || snapshot != 0 && (tbl.Snapshot == nil || tbl.Snapshot.ID != snapshot) {
			t.Fatalf("a table without a schema, or not the snapshot asked for: %+v", tbl)
		}
		if _, err := ArrowSchema(tbl.Schema.Fields); err == nil {
			tbl.StableNames([]string{"a", "id"})
		}
		// The manifest list is not in the store: an error, not a panic.
		if tbl.Snapshot != nil {
			if _, err := tbl.Plan(ctx, open, nil); err == nil && tbl.Snapshot.ManifestList != "" {
				t.Fatalf("planned snapshot %d without its manifest list %q", tbl.Snapshot.ID, tbl.Snapshot.ManifestList)
			}
		}
	})
}

// FuzzManifest: any bytes as a manifest or a manifest list are entries
// or an error, never a panic.
func FuzzManifest(f *testing.F) {
	for _, a := range seeds(f, "*.avro") {
		f.Add(a)
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		if es, err := readAvro(b, readManifestEntry); err == nil {
			for _, e := range es {
				if e.Path == "" {
					t.Fatalf("an entry without a path: %+v", e)
				}
			}
		}
		if ms, err := readAvro(b, readManifestFile); err == nil {
			for _, m := range ms {
				if m.Path == "" {
					t.Fatalf("a manifest without a path: %+v", m)
				}
			}
		}
	})
}
