package storetest

import (
	"context"
	"testing"

	"github.com/sluice-data/sluice/store"
)

// Put writes data under key straight through d, failing t on any error:
// the set-up of tests of what sits above a driver.
func Put(t testing.TB, d store.Driver, key string, data []byte) {
	t.Helper()
	w, err := d.NewWriter(context.Background(), key, store.WriteOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := w.Write(data); err != nil {
		w.Abort()
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
}
