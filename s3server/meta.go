package s3server

import (
	"encoding/json"
	"errors"
	"net/http"
	"os"
	"strings"
	"syscall"

	"golang.org/x/sys/unix"
)

// metaXattr is the extended attribute that holds what S3 keeps beside an
// object's bytes and a file cannot: its headers, its multipart ETag and
// part sizes, its checksum. It is set on the temporary file before the
// rename that commits the object, so it moves with the bytes atomically
// and goes with the file when the object is replaced or deleted.
const metaXattr = "user.sluice.s3"

// objMeta is the content of metaXattr. It describes the file version it
// was written with (size and modification time): a file changed by other
// means afterwards is served as a plain file again, its ETag its MD5.
type objMeta struct {
	Size  int64 `json:"size"`
	MTime int64 `json:"mtime"`
	// ETag, quoted; for a multipart object "<md5 of the part md5s>-<n>".
	ETag string `json:"etag,omitempty"`
	// Parts are the part sizes of a multipart object, for partNumber GETs.
	Parts []int64 `json:"parts,omitempty"`
	// Headers are the stored response headers: Content-Type,
	// Content-Disposition, Content-Encoding, Content-Language,
	// Cache-Control, Expires and x-amz-meta-*.
	Headers map[string]string `json:"headers,omitempty"`
	// Checksum is the object's x-amz-checksum-<algorithm> (lower case)
	// and its base64 value; ChecksumType FULL_OBJECT or COMPOSITE.
	ChecksumAlgo  string `json:"cksum_algo,omitempty"`
	Checksum      string `json:"cksum,omitempty"`
	ChecksumType  string `json:"cksum_type,omitempty"`
	ChecksumParts int    `json:"cksum_parts,omitempty"`
}

// storedHeaders are the request headers S3 stores with an object and
// returns on GET and HEAD, besides x-amz-meta-*.
var storedHeaders = []string{"Content-Type", "Content-Disposition", "Content-Encoding", "Content-Language", "Cache-Control", "Expires",
	// Stored and returned; it redirects only on a website endpoint, which
	// this server is not.
	"X-Amz-Website-Redirect-Location"}

// maxUserMeta is S3's limit on the size of the x-amz-meta-* headers.
const maxUserMeta = 2 << 10

// headersOf collects the headers of a request that S3 stores with the
// object.
func headersOf(h http.Header) (map[string]string, error) {
	m := map[string]string{}
	for _, k := range storedHeaders {
		if v := h.Get(k); v != "" {
			m[k] = v
		}
	}
	if v := m["X-Amz-Website-Redirect-Location"]; v != "" && !strings.HasPrefix(v, "/") && !strings.HasPrefix(v, "http://") && !strings.HasPrefix(v, "https://") {
		return nil, &s3Error{http.StatusBadRequest, "InvalidRedirectLocation", "The website redirect location must have a prefix of 'http://' or 'https://' or '/'."}
	}
	user := 0
	for k, vs := range h {
		lk := strings.ToLower(k)
		if strings.HasPrefix(lk, "x-amz-meta-") {
			m[lk] = strings.Join(vs, ",")
			user += len(lk) - len("x-amz-meta-") + len(m[lk])
		}
	}
	if user > maxUserMeta {
		return nil, &s3Error{http.StatusBadRequest, "MetadataTooLarge", "Your metadata headers exceed the maximum allowed metadata size"}
	}
	return m, nil
}

// writeMeta records m on the file at path (a temporary file, before it is
// renamed into place), for the file's current size and time. A file
// system without user extended attributes keeps no metadata: the object
// is still stored, and served as a plain file.
func writeMeta(path string, m *objMeta) error {
	fi, err := os.Stat(path)
	if err != nil {
		return err
	}
	m.Size, m.MTime = fi.Size(), fi.ModTime().UnixNano()
	b, err := json.Marshal(m)
	if err != nil {
		return err
	}
	err = unix.Setxattr(path, metaXattr, b, 0)
	if errors.Is(err, syscall.ENOTSUP) || errors.Is(err, syscall.EOPNOTSUPP) {
		return nil
	}
	return err
}

// readMeta returns the metadata of an open file, or nil when it has none
// or it was written for another version of the file.
func readMeta(f *os.File, fi os.FileInfo) *objMeta {
	buf := make([]byte, 4<<10)
	n, err := unix.Fgetxattr(int(f.Fd()), metaXattr, buf)
	if errors.Is(err, syscall.ERANGE) {
		if sz, err2 := unix.Fgetxattr(int(f.Fd()), metaXattr, nil); err2 == nil {
			buf = make([]byte, sz)
			n, err = unix.Fgetxattr(int(f.Fd()), metaXattr, buf)
		}
	}
	if err != nil {
		return nil
	}
	var m objMeta
	if json.Unmarshal(buf[:n], &m) != nil || m.Size != fi.Size() || m.MTime != fi.ModTime().UnixNano() {
		return nil
	}
	return &m
}
