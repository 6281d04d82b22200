package sim

import (
	"bytes"
	"path/filepath"
	"testing"

	"github.com/sluice-data/sluice/store"
)

// Open puts the link model under the store whatever opts.Wrap says, and
// with shared request buckets scopes its prefixes by the store's root.
func TestOpen(t *testing.T) {
	dir := t.TempDir()
	share := filepath.Join(t.TempDir(), "buckets")
	for _, c := range []struct {
		spec  string
		scope string // the link's scope; "-" for no link at all
	}{
		{"none", "-"},
		{"ttfb=1ms", ""},
		{"reqlimit=100:100,reqshare=" + share, "file://" + dir + "/sub/"},
	} {
		p := mustParse(t, c.spec)
		opts := store.Options{Wrap: func(d store.Driver) store.Driver { t.Fatal("opts.Wrap used"); return d }}
		st, key, err := Open(t.Context(), "file://"+dir+"/sub/", opts, p)
		if err != nil {
			t.Fatal(err)
		}
		if key != "" {
			t.Errorf("%s: key %q", c.spec, key)
		}
		l, isLink := st.Driver().(*link)
		switch {
		case c.scope == "-" && isLink:
			t.Errorf("%s: a link model where there is none", c.spec)
		case c.scope != "-" && !isLink:
			t.Errorf("%s: no link model", c.spec)
		case c.scope != "-" && l.scope != c.scope:
			t.Errorf("%s: scope %q, want %q", c.spec, l.scope, c.scope)
		}
		// The store works through it.
		if _, err := st.Put(t.Context(), key+"x", bytes.NewReader([]byte("x")), store.WriteOptions{}); err != nil {
			t.Errorf("%s: %v", c.spec, err)
		}
		st.Close()
	}
}
