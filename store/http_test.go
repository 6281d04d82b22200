package store_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/pem"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/sluice-data/sluice/store"
	"github.com/sluice-data/sluice/store/storetest"
)

// webServer serves dir the ways web servers do: mode "etag" with a strong
// ETag (a hash of the bytes), "lastmod" with only Last-Modified, "plain"
// ignoring Range, If-Match and HEAD (405), the whole object every time.
func webServer(t *testing.T, dir, mode string, tls bool) *httptest.Server {
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		path := filepath.Join(dir, filepath.FromSlash(strings.TrimPrefix(r.URL.Path, "/")))
		b, err := os.ReadFile(path)
		if err != nil {
			http.NotFound(w, r)
			return
		}
		fi, _ := os.Stat(path)
		switch mode {
		case "etag":
			sum := sha256.Sum256(b)
			w.Header().Set("Etag", `"`+hex.EncodeToString(sum[:8])+`"`)
		case "plain":
			if r.Method == http.MethodHead {
				w.WriteHeader(http.StatusMethodNotAllowed)
				return
			}
			w.Write(b)
			return
		}
		http.ServeContent(w, r, path, fi.ModTime(), bytes.NewReader(b))
	})
	var srv *httptest.Server
	if tls {
		srv = httptest.NewTLSServer(h)
		// The driver trusts it as a user's process would: SSL_CERT_FILE.
		ca := filepath.Join(t.TempDir(), "ca.pem")
		pemBytes := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: srv.Certificate().Raw})
		if err := os.WriteFile(ca, pemBytes, 0o600); err != nil {
			t.Fatal(err)
		}
		t.Setenv("SSL_CERT_FILE", ca)
	} else {
		srv = httptest.NewServer(h)
	}
	t.Cleanup(srv.Close)
	return srv
}

// readsOverHTTP is a store whose reads (Stat, ReadRange) go to a web
// server over the files a directory driver writes, lists and deletes:
// the conformance suite then checks the HTTP driver's reads, and its
// ETags, against objects it can make.
type readsOverHTTP struct {
	store.Driver // the directory's, for writes, listing and deletes
	web          store.Driver
}

func (d readsOverHTTP) Stat(ctx context.Context, key string) (store.ObjectInfo, error) {
	return d.web.Stat(ctx, key)
}

func (d readsOverHTTP) ReadRange(ctx context.Context, key string, r store.Range, o store.ReadOptions) (io.ReadCloser, store.ObjectInfo, error) {
	return d.web.ReadRange(ctx, key, r, o)
}

func (d readsOverHTTP) List(ctx context.Context, prefix string, fn func(store.ObjectInfo) error) error {
	return d.Driver.List(ctx, prefix, func(o store.ObjectInfo) error {
		w, err := d.web.Stat(ctx, o.Key)
		if err != nil {
			return err
		}
		return fn(w)
	})
}

func (d readsOverHTTP) Classify(err error) store.Kind {
	if k := d.web.Classify(err); k != store.KindUnknown {
		return k
	}
	return d.Driver.Classify(err)
}

func TestHTTPConformance(t *testing.T) {
	for _, tls := range []bool{false, true} {
		name := "http"
		if tls {
			name = "https"
		}
		t.Run(name, func(t *testing.T) {
			dir := t.TempDir()
			srv := webServer(t, dir, "etag", tls)
			storetest.Run(t, func(t *testing.T) *store.Store {
				var file, web store.Driver
				store.Open(context.Background(), dir+"/", store.Options{Wrap: func(d store.Driver) store.Driver { file = d; return d }})
				store.Open(context.Background(), srv.URL+"/", store.Options{Wrap: func(d store.Driver) store.Driver { web = d; return d }})
				if file == nil || web == nil {
					t.Fatal("could not open the directory or the server")
				}
				return store.New(readsOverHTTP{file, web}, srv.URL+"/")
			})
		})
	}
}

// TestHTTPServers: a server with only Last-Modified, and one that ignores
// Range and If-Match and refuses HEAD, still give the right bytes and
// sizes, and a replaced object is caught by its pinned version.
func TestHTTPServers(t *testing.T) {
	ctx := context.Background()
	data := []byte(strings.Repeat("0123456789", 100))
	for _, mode := range []string{"lastmod", "plain"} {
		t.Run(mode, func(t *testing.T) {
			dir := t.TempDir()
			if err := os.WriteFile(filepath.Join(dir, "obj"), data, 0o644); err != nil {
				t.Fatal(err)
			}
			srv := webServer(t, dir, mode, false)
			st, key, err := store.Open(ctx, srv.URL+"/obj", store.Options{})
			if err != nil {
				t.Fatal(err)
			}
			defer st.Close()
			info, err := st.Stat(ctx, key)
			if err != nil || info.Size != 1000 {
				t.Fatalf("stat: %+v, %v", info, err)
			}
			for _, r := range []store.Range{{Off: 10, Len: 15}, store.Suffix(8), {Off: 990, Len: -1}, {Off: 2000, Len: 5}, store.All()} {
				rc, o, err := st.ReadRange(ctx, key, r, store.ReadOptions{IfMatch: info.ETag})
				if err != nil {
					t.Fatalf("range %+v: %v", r, err)
				}
				got, _ := io.ReadAll(rc)
				rc.Close()
				var want []byte
				switch {
				case r.Off < 0:
					want = data[len(data)+int(r.Off):]
				case r.Off >= int64(len(data)):
				case r.Len < 0:
					want = data[r.Off:]
				default:
					want = data[r.Off : r.Off+r.Len]
				}
				if !bytes.Equal(got, want) || o.Size != 1000 {
					t.Errorf("range %+v: %q (size %d), want %q", r, got, o.Size, want)
				}
			}
			objs, err := st.List(ctx, key)
			if err != nil || len(objs) != 1 || objs[0].Size != 1000 {
				t.Errorf("list of the object: %+v, %v", objs, err)
			}
			if mode == "plain" {
				return // no version to pin
			}
			// Replaced by one of another size a second later: Last-Modified
			// and the size both move.
			later := time.Now().Add(2 * time.Second)
			if err := os.WriteFile(filepath.Join(dir, "obj"), data[:900], 0o644); err != nil {
				t.Fatal(err)
			}
			os.Chtimes(filepath.Join(dir, "obj"), later, later)
			_, _, err = st.ReadRange(ctx, key, store.Range{Off: 0, Len: 10}, store.ReadOptions{IfMatch: info.ETag})
			if !errors.Is(err, store.ErrPrecondition) {
				t.Errorf("read of a replaced object pinned by %q: %v, want the object changed", info.ETag, err)
			}
		})
	}
}

// TestHTTPRefusals: listing a prefix, writing and deleting each fail in
// one line that says why; a missing object is not found.
func TestHTTPRefusals(t *testing.T) {
	ctx := context.Background()
	srv := webServer(t, t.TempDir(), "etag", false)
	st, _, err := store.Open(ctx, srv.URL+"/", store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	_, err = st.List(ctx, "dir/")
	if !errors.Is(err, store.ErrInvalid) || !strings.Contains(err.Error(), "HTTP cannot list") {
		t.Errorf("list of a prefix: %v", err)
	}
	if _, err := st.Stat(ctx, "missing"); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("stat of a missing object: %v", err)
	}
	if _, err := st.Put(ctx, "x", strings.NewReader("y"), store.WriteOptions{}); !errors.Is(err, store.ErrInvalid) || !strings.Contains(err.Error(), "read-only") {
		t.Errorf("put: %v", err)
	}
	if err := st.Delete(ctx, "x"); !errors.Is(err, store.ErrInvalid) {
		t.Errorf("delete: %v", err)
	}
	if _, _, err := store.Open(ctx, "https://user:pw@example.com/x", store.Options{}); err == nil || strings.Contains(err.Error(), "pw") {
		t.Errorf("a URL with credentials: %v", err)
	}
}
