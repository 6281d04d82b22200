package s3server

import (
	"errors"
	"io"
	"net/http"
	"strings"
)

// gofakes3 honours If-None-Match on GET and HEAD but ignores If-Match,
// which readers use to pin an object version across range reads. This
// middleware enforces it on the response itself: the ETag gofakes3 sets
// is that of the very file it is about to send, so the check and the
// bytes cannot disagree even when the object is replaced concurrently.
func ifMatch(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		want := r.Header.Get("If-Match")
		if want == "" || (r.Method != http.MethodGet && r.Method != http.MethodHead) {
			next.ServeHTTP(w, r)
			return
		}
		iw := &ifMatchWriter{ResponseWriter: w, r: r, want: want}
		next.ServeHTTP(iw, r)
		// A HEAD handler may return without writing: the status is then
		// an implicit 200, still to be checked.
		iw.decide(http.StatusOK)
	})
}

var errPrecondition = errors.New("precondition failed")

type ifMatchWriter struct {
	http.ResponseWriter
	r       *http.Request
	want    string
	decided bool
	failed  bool
}

// decide runs once, when the handler commits to a status.
func (w *ifMatchWriter) decide(status int) {
	if w.decided {
		return
	}
	w.decided = true
	if status >= 200 && status < 300 && !etagMatches(w.want, w.Header().Get("ETag")) {
		w.failed = true
		h := w.Header()
		for _, k := range []string{"Content-Range", "Accept-Ranges", "Last-Modified", "Content-Type"} {
			h.Del(k)
		}
		writeError(w.ResponseWriter, w.r, http.StatusPreconditionFailed, "PreconditionFailed",
			"At least one of the pre-conditions you specified did not hold")
	}
}

func (w *ifMatchWriter) WriteHeader(status int) {
	w.decide(status)
	if !w.failed {
		w.ResponseWriter.WriteHeader(status)
	}
}

func (w *ifMatchWriter) Write(p []byte) (int, error) {
	w.decide(http.StatusOK)
	if w.failed {
		// Stop the handler's copy rather than read the object for nothing.
		return 0, errPrecondition
	}
	return w.ResponseWriter.Write(p)
}

// ReadFrom keeps net/http's sendfile path for the object body.
func (w *ifMatchWriter) ReadFrom(src io.Reader) (int64, error) {
	w.decide(http.StatusOK)
	if w.failed {
		return 0, errPrecondition
	}
	if rf, ok := w.ResponseWriter.(io.ReaderFrom); ok {
		return rf.ReadFrom(src)
	}
	return io.Copy(w.ResponseWriter, src)
}

// etagMatches compares If-Match (a list, or "*") with an ETag, quotes
// optional as S3 accepts them either way.
func etagMatches(ifMatch, etag string) bool {
	if etag == "" {
		return false
	}
	etag = strings.Trim(etag, `"`)
	for _, c := range strings.Split(ifMatch, ",") {
		c = strings.TrimSpace(c)
		if c == "*" || strings.Trim(c, `"`) == etag {
			return true
		}
	}
	return false
}
