package cli

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/pem"
	"io"
	"log"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
)

// TestHTTPSObjects: Parquet files published on an HTTPS server (trusted
// through SSL_CERT_FILE, ETags on) are read by scan, run, run --workers,
// show, cat, cp and ls as the same files on disk are; what HTTP cannot
// do (list a prefix or a glob, take a write) fails in one line, exit 2,
// and a missing object is exit 3.
func TestHTTPSObjects(t *testing.T) {
	dir := t.TempDir()
	if r := sluice(t, nil, "gen", "taxi", "--rows", "20000", "--files", "2", "--row-group-rows", "4000", "--out", filepath.Join(dir, "taxi"), "-q"); r.code != 0 {
		t.Fatalf("gen: %+v", r)
	}
	var requests atomic.Int64
	files := http.FileServer(http.Dir(dir))
	srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		requests.Add(1)
		if b, err := os.ReadFile(filepath.Join(dir, filepath.FromSlash(r.URL.Path))); err == nil {
			sum := sha256.Sum256(b)
			w.Header().Set("Etag", `"`+hex.EncodeToString(sum[:8])+`"`)
		}
		files.ServeHTTP(w, r)
	}))
	// The untrusted client's handshake is the test's; not the log's.
	srv.Config.ErrorLog = log.New(io.Discard, "", 0)
	defer srv.Close()
	ca := filepath.Join(dir, "ca.pem")
	if err := os.WriteFile(ca, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: srv.Certificate().Raw}), 0o600); err != nil {
		t.Fatal(err)
	}
	env := []string{"SSL_CERT_FILE=" + ca}
	local := []string{filepath.Join(dir, "taxi", "part-00000.parquet"), filepath.Join(dir, "taxi", "part-00001.parquet")}
	web := []string{srv.URL + "/taxi/part-00000.parquet", srv.URL + "/taxi/part-00001.parquet"}

	query := " | filter \"payment_type <> 'cash'\" | sum-by pickup_date fare_amount | to-csv"
	want := sluice(t, nil, "run", "scan "+strings.Join(local, " ")+query)
	if want.code != 0 || strings.Count(want.stdout, "\n") < 10 {
		t.Fatalf("local run: %+v", want)
	}
	for name, args := range map[string][]string{
		"run":           {"run", "scan " + strings.Join(web, " ") + query},
		"run --workers": {"run", "--workers", "2", "--piece-size", "64KiB", "scan " + strings.Join(web, " ") + query},
	} {
		r := sluice(t, env, args...)
		if r.code != 0 || r.stdout != want.stdout {
			t.Errorf("%s over HTTPS: exit %d, %d bytes (want %d): %s", name, r.code, len(r.stdout), len(want.stdout), r.stderr)
		}
	}
	before := requests.Load()
	wantShow := sluice(t, nil, "show", local[1], "--rows", "3")
	if r := sluice(t, env, "show", web[1], "--rows", "3"); r.code != 0 || r.stdout != wantShow.stdout {
		t.Errorf("show over HTTPS: %+v, want %q", r, wantShow.stdout)
	}
	if requests.Load() == before {
		t.Error("show made no request to the server")
	}
	orig, err := os.ReadFile(local[0])
	if err != nil {
		t.Fatal(err)
	}
	if r := sluice(t, env, "cat", web[0]); r.code != 0 || r.stdout != string(orig) {
		t.Errorf("cat: exit %d, %d bytes, want %d: %s", r.code, len(r.stdout), len(orig), r.stderr)
	}
	copied := filepath.Join(dir, "copy.parquet")
	if r := sluice(t, env, "cp", web[0], copied); r.code != 0 {
		t.Errorf("cp: %+v", r)
	} else if b, _ := os.ReadFile(copied); string(b) != string(orig) {
		t.Errorf("cp wrote %d bytes, want the %d of the original", len(b), len(orig))
	}
	if r := sluice(t, env, "ls", web[0]); r.code != 0 || !strings.Contains(r.stdout, "part-00000.parquet") || !strings.Contains(r.stdout, "1 object") {
		t.Errorf("ls of one object: %+v", r)
	}

	outs := t.TempDir()
	assertBadInputs(t, env, outs, []badInput{
		{"ls of a prefix", []string{"ls", srv.URL + "/taxi/"}, 2, "HTTP cannot list"},
		{"scan of a glob", []string{"scan", srv.URL + "/taxi/*.parquet", "-o", filepath.Join(outs, "out.arrows")}, 2, "HTTP cannot list"},
		{"cp to a web server", []string{"cp", local[0], srv.URL + "/taxi/new.parquet"}, 2, "read-only"},
		{"a missing object", []string{"scan", srv.URL + "/taxi/nope.parquet", "-o", filepath.Join(outs, "out.arrows")}, 3, "404"},
	})
	if _, err := os.Stat(filepath.Join(dir, "taxi", "new.parquet")); err == nil {
		t.Error("a cp to the web server left a file")
	}
	// Without the CA the server is not trusted, in one line.
	r := sluice(t, nil, "cat", web[0])
	assertCleanFailure(t, r, 1, "certificate")
}
