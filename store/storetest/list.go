package storetest

import (
	"context"
	"strings"
	"testing"

	"github.com/sluice-data/sluice/store"
)

// List opens url and lists the objects under it, their keys relative to
// it; a prefix that does not exist holds none. Tests use it to see what
// a job or a failed write left behind.
func List(t testing.TB, url string, opts store.Options) []store.ObjectInfo {
	t.Helper()
	st, prefix, err := store.Open(context.Background(), url, opts)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	infos, err := st.List(context.Background(), prefix)
	if err != nil && store.KindOf(err) != store.KindNotFound {
		t.Fatal(err)
	}
	for i := range infos {
		infos[i].Key = strings.TrimPrefix(infos[i].Key, prefix)
	}
	return infos
}
