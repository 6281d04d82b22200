package iceberg

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/sluice-data/sluice/internal/icebergtest"
	"github.com/sluice-data/sluice/store"
)

// TestRESTCatalog loads a table through a REST catalog, with a token from
// client credentials, and plans the files its metadata file plans; a
// wrong secret is a permission error and an unknown table not found.
func TestRESTCatalog(t *testing.T) {
	dir := t.TempDir()
	steps := icebergtest.Fixture(t, dir)
	last := steps[len(steps)-1]
	srv := icebergtest.RESTCatalog(t, map[string]string{"db.t": last.Metadata, "a.b.t": steps[1].Metadata}, "sluice", "s3cret")
	ctx := context.Background()
	open := func(ctx context.Context, url string) (*store.Store, string, error) {
		return store.Open(ctx, url, store.Options{})
	}

	byFile, err := Open(ctx, open, filepath.Join(dir, "db", "t"), Options{})
	if err != nil {
		t.Fatal(err)
	}
	want, err := byFile.Plan(ctx, open, nil)
	if err != nil {
		t.Fatal(err)
	}
	c := &Catalog{URI: srv.URL + "/?warehouse=main", Credential: "sluice:s3cret"}
	tbl, err := c.Load(ctx, "db.t", Options{})
	if err != nil {
		t.Fatal(err)
	}
	got, err := tbl.Plan(ctx, open, nil)
	if err != nil {
		t.Fatal(err)
	}
	if tbl.Snapshot.ID != last.ID || len(got) != len(want) || tbl.URL != last.Metadata {
		t.Fatalf("through the catalog: snapshot %d, %d tasks, %s; want %d, %d, %s", tbl.Snapshot.ID, len(got), tbl.URL, last.ID, len(want), last.Metadata)
	}
	for i := range got {
		if got[i].File.URL != want[i].File.URL || len(got[i].Deletes) != len(want[i].Deletes) {
			t.Errorf("task %d: %s with %d deletes, want %s with %d", i, got[i].File.URL, len(got[i].Deletes), want[i].File.URL, len(want[i].Deletes))
		}
	}
	// A namespace of two levels, and a snapshot chosen in it.
	if tbl, err := c.Load(ctx, "a.b.t", Options{SnapshotID: steps[1].ID}); err != nil || tbl.Snapshot.ID != steps[1].ID {
		t.Errorf("a.b.t at snapshot %d: %v", steps[1].ID, err)
	}
	for _, bad := range []struct {
		c     *Catalog
		ident string
		kind  store.Kind
	}{
		{&Catalog{URI: srv.URL, Credential: "sluice:wrong"}, "db.t", store.KindPermission},
		{&Catalog{URI: srv.URL, Token: "forged"}, "db.t", store.KindPermission},
		{&Catalog{URI: srv.URL, Credential: "sluice:s3cret"}, "db.nope", store.KindNotFound},
	} {
		if _, err := bad.c.Load(ctx, bad.ident, Options{}); store.KindOf(err) != bad.kind {
			t.Errorf("%s with %+v: %v (%v), want %v", bad.ident, bad.c, err, store.KindOf(err), bad.kind)
		}
	}
	if _, err := c.Load(ctx, "t", Options{}); err == nil {
		t.Error("a table without a namespace was loaded")
	}
}
