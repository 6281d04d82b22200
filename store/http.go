package store

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"strconv"
	"strings"
)

// httpDriver reads objects published over HTTP(S): a key is the path (and
// query, so a presigned URL works) under scheme://host/. It reads ranges
// with Range requests and pins a version with If-Match on the ETag, or,
// from a server that sends none, on Last-Modified and the size. HTTP
// cannot list: List finds the one object its prefix names, and refuses a
// prefix that ends in "/". It writes nothing.
type httpDriver struct {
	base   string // scheme://host/
	client *http.Client
	tr     *Transport
}

func openHTTP(rawURL string, opts Options) (Driver, string, string, error) {
	u, err := url.Parse(rawURL)
	if err != nil || u.Host == "" {
		return nil, "", "", &Error{Op: "open", URL: rawURL, Kind: KindInvalid, Err: fmt.Errorf("want %s://host/path", strings.SplitN(rawURL, ":", 2)[0])}
	}
	if u.User != nil {
		return nil, "", "", &Error{Op: "open", URL: redact(u), Kind: KindInvalid, Err: errors.New("credentials in the URL are not sent: use a presigned URL")}
	}
	base := u.Scheme + "://" + u.Host + "/"
	key := strings.TrimPrefix(rawURL[len(u.Scheme)+3+len(u.Host):], "/")
	if i := strings.IndexByte(key, '#'); i >= 0 {
		key = key[:i]
	}
	tr := NewTransport(opts)
	if u.Scheme == "https" {
		if err := trustCertFile(tr); err != nil {
			return nil, "", "", &Error{Op: "open", URL: rawURL, Kind: KindInvalid, Err: err}
		}
	}
	return &httpDriver{base: base, tr: tr, client: &http.Client{Transport: tr}}, base, key, nil
}

// trustCertFile adds the CAs of SSL_CERT_FILE to the system's for tr, as
// Go does once a process; read at each open, so that the file a process
// sets after its first TLS connection counts too.
func trustCertFile(tr *Transport) error {
	f := os.Getenv("SSL_CERT_FILE")
	if f == "" {
		return nil
	}
	pem, err := os.ReadFile(f)
	if err != nil {
		return fmt.Errorf("SSL_CERT_FILE: %w", err)
	}
	pool, err := x509.SystemCertPool()
	if err != nil {
		pool = x509.NewCertPool()
	}
	if !pool.AppendCertsFromPEM(pem) {
		return fmt.Errorf("SSL_CERT_FILE %s holds no PEM certificate", f)
	}
	tr.base.TLSClientConfig = &tls.Config{RootCAs: pool}
	return nil
}

func redact(u *url.URL) string {
	c := *u
	c.User = nil
	return c.String()
}

// HTTP errors carry the status, which Classify reads.
type httpStatusError struct {
	code   int
	status string
}

func (e *httpStatusError) Error() string { return "HTTP " + e.status }

// errHTTPList is List of a prefix: a web server has no listing to give.
var errHTTPList = errors.New("HTTP cannot list objects: name each object's URL (a prefix ending in / or a glob needs s3://, file:// or mem://)")

var errHTTPReadOnly = errors.New("http(s):// URLs are read-only")

func (d *httpDriver) request(ctx context.Context, method, key string, hdr http.Header) (*http.Response, error) {
	req, err := http.NewRequestWithContext(ctx, method, d.base+key, nil)
	if err != nil {
		return nil, err
	}
	for k, v := range hdr {
		req.Header[k] = v
	}
	return d.client.Do(req)
}

// info is the object a response describes: size from Content-Range's
// total or Content-Length, and its version tag (see versionOf).
func (d *httpDriver) info(key string, resp *http.Response) ObjectInfo {
	o := ObjectInfo{Key: key, Size: resp.ContentLength}
	if cr := resp.Header.Get("Content-Range"); cr != "" {
		if i := strings.LastIndexByte(cr, '/'); i >= 0 {
			if n, err := strconv.ParseInt(cr[i+1:], 10, 64); err == nil {
				o.Size = n
			}
		}
	}
	o.ETag = versionOf(resp, o.Size)
	if t, err := http.ParseTime(resp.Header.Get("Last-Modified")); err == nil {
		o.ModTime = t
	}
	return o
}

// versionOf is what pins an object's bytes: its ETag, or without one its
// Last-Modified and size ("lm:" marks such a tag, which no server sends).
func versionOf(resp *http.Response, size int64) string {
	if e := resp.Header.Get("Etag"); e != "" {
		return e
	}
	lm := resp.Header.Get("Last-Modified")
	if lm == "" {
		return ""
	}
	return "lm:" + lm + ";" + strconv.FormatInt(size, 10)
}

func statusErr(resp *http.Response) error {
	io.Copy(io.Discard, io.LimitReader(resp.Body, 4<<10))
	resp.Body.Close()
	return &httpStatusError{code: resp.StatusCode, status: resp.Status}
}

func (d *httpDriver) Stat(ctx context.Context, key string) (ObjectInfo, error) {
	resp, err := d.request(ctx, http.MethodHead, key, nil)
	if err != nil {
		return ObjectInfo{}, err
	}
	if resp.StatusCode == http.StatusMethodNotAllowed || resp.StatusCode == http.StatusNotImplemented || resp.ContentLength < 0 {
		// No HEAD, or no length in it: the first byte tells the size.
		resp.Body.Close()
		rc, o, err := d.ReadRange(ctx, key, Range{Off: 0, Len: 1}, ReadOptions{})
		if err != nil {
			return ObjectInfo{}, err
		}
		rc.Close()
		return o, nil
	}
	if resp.StatusCode != http.StatusOK {
		return ObjectInfo{}, statusErr(resp)
	}
	resp.Body.Close()
	return d.info(key, resp), nil
}

func (d *httpDriver) List(ctx context.Context, prefix string, fn func(ObjectInfo) error) error {
	if prefix == "" || strings.HasSuffix(prefix, "/") {
		return errHTTPList
	}
	o, err := d.Stat(ctx, prefix)
	if err != nil {
		return err
	}
	return fn(o)
}

func (d *httpDriver) ReadRange(ctx context.Context, key string, r Range, opts ReadOptions) (io.ReadCloser, ObjectInfo, error) {
	hdr := http.Header{}
	switch {
	case r.Off < 0:
		hdr.Set("Range", fmt.Sprintf("bytes=%d", r.Off)) // bytes=-N
	case r.Len < 0 && r.Off > 0:
		hdr.Set("Range", fmt.Sprintf("bytes=%d-", r.Off))
	case r.Len == 0:
		hdr.Set("Range", fmt.Sprintf("bytes=%d-%d", r.Off, r.Off)) // for the size; the body is dropped
	case r.Len > 0:
		hdr.Set("Range", fmt.Sprintf("bytes=%d-%d", r.Off, r.Off+r.Len-1))
	}
	if tag, ok := strings.CutPrefix(opts.IfMatch, "lm:"); ok {
		lm, _, _ := strings.Cut(tag, ";")
		hdr.Set("If-Unmodified-Since", lm)
	} else if opts.IfMatch != "" && !strings.HasPrefix(opts.IfMatch, "W/") {
		hdr.Set("If-Match", opts.IfMatch)
	}
	resp, err := d.request(ctx, http.MethodGet, key, hdr)
	if err != nil {
		return nil, ObjectInfo{}, err
	}
	o := d.info(key, resp)
	var body io.ReadCloser = resp.Body
	switch resp.StatusCode {
	case http.StatusPartialContent:
	case http.StatusOK:
		// The server sent the whole object: skip to the range.
		o.Size = resp.ContentLength
		off := r.Off
		if off < 0 {
			off = max(0, o.Size+off)
		}
		if _, err := io.CopyN(io.Discard, resp.Body, off); err != nil && !errors.Is(err, io.EOF) {
			resp.Body.Close()
			return nil, ObjectInfo{}, err
		}
		if r.Len >= 0 && r.Off >= 0 {
			body = struct {
				io.Reader
				io.Closer
			}{io.LimitReader(resp.Body, r.Len), resp.Body}
		}
	case http.StatusRequestedRangeNotSatisfiable:
		// At or past the end: an empty body, as the Driver contract says.
		resp.Body.Close()
		body = http.NoBody
	default:
		return nil, ObjectInfo{}, statusErr(resp)
	}
	if r.Len == 0 {
		resp.Body.Close()
		body = http.NoBody
	}
	if opts.IfMatch != "" && o.ETag != "" && strings.TrimPrefix(o.ETag, "W/") != strings.TrimPrefix(opts.IfMatch, "W/") {
		// A server that ignores If-Match still names what it sent.
		body.Close()
		return nil, ObjectInfo{}, &httpStatusError{code: http.StatusPreconditionFailed, status: "412 Precondition Failed (the object changed)"}
	}
	return body, o, nil
}

func (d *httpDriver) NewWriter(context.Context, string, WriteOptions) (DriverWriter, error) {
	return nil, errHTTPReadOnly
}

func (d *httpDriver) Delete(context.Context, string) error { return errHTTPReadOnly }

func (d *httpDriver) Classify(err error) Kind {
	var se *httpStatusError
	switch {
	case errors.Is(err, errHTTPList), errors.Is(err, errHTTPReadOnly):
		return KindInvalid
	case errors.As(err, &se):
		return KindOfStatus(se.code)
	}
	return KindOfTransport(err)
}

func (d *httpDriver) Close() error {
	d.tr.CloseIdleConnections()
	return nil
}
