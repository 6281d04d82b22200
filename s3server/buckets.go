package s3server

import (
	"encoding/xml"
	"io"
	"net/http"
	"net/url"
	"os"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/johannesboyne/gofakes3"
)

// The bucket operations, the lists of uploads and parts, abort and plain
// delete, answered as S3 answers them (error wording, checksum
// algorithms, delimiters, argument checks).

var (
	errInvalidBucket   = &s3Error{http.StatusBadRequest, "InvalidBucketName", "The specified bucket is not valid."}
	errBucketExists    = &s3Error{http.StatusConflict, "BucketAlreadyOwnedByYou", "Your previous request to create the named bucket succeeded and you already own it."}
	errBucketNotEmpty  = &s3Error{http.StatusConflict, "BucketNotEmpty", "The bucket you tried to delete is not empty."}
	errInvalidLocation = &s3Error{http.StatusBadRequest, "InvalidLocationConstraint", "The specified location-constraint is not valid"}
	errMalformedXML    = &s3Error{http.StatusBadRequest, "MalformedXML", "The XML you provided was not well-formed or did not validate against our published schema."}
)

// maxConfigBody bounds the XML bodies read here (CreateBucketConfiguration).
const maxConfigBody = 1 << 20

func (b *dirBackend) headBucket(w http.ResponseWriter, bucket string) error {
	if _, err := b.bucketPath(bucket); err != nil {
		return err
	}
	w.Header().Set("X-Amz-Bucket-Region", b.region)
	w.WriteHeader(http.StatusOK)
	return nil
}

func (b *dirBackend) createBucket(w http.ResponseWriter, r *http.Request, bucket string) error {
	if gofakes3.ValidateBucketName(bucket) != nil {
		return errInvalidBucket
	}
	// Without ACLs, the owner owns every object: BucketOwnerEnforced is
	// what this server does; the other settings need ACLs.
	switch o := r.Header.Get("X-Amz-Object-Ownership"); o {
	case "", "BucketOwnerEnforced":
	case "BucketOwnerPreferred", "ObjectWriter":
		return &authError{status: http.StatusNotImplemented, code: "NotImplemented",
			msg: "A header you provided implies functionality that is not implemented.", fields: []string{"Header", "X-Amz-Object-Ownership"}}
	default:
		return &authError{status: http.StatusBadRequest, code: "InvalidArgument", msg: "Invalid x-amz-object-ownership header: " + o,
			fields: []string{"ArgumentName", "x-amz-object-ownership"}}
	}
	body, err := io.ReadAll(io.LimitReader(r.Body, maxConfigBody+1))
	if err != nil {
		return err
	}
	if len(body) > maxConfigBody {
		return errMalformedXML
	}
	if len(strings.TrimSpace(string(body))) > 0 {
		var cfg struct {
			LocationConstraint string `xml:"LocationConstraint"`
			Tags               []struct {
				Key, Value string
			} `xml:"Tags>Tag"`
		}
		if xml.Unmarshal(body, &cfg) != nil {
			return errMalformedXML
		}
		if len(cfg.Tags) > 0 {
			return &s3Error{http.StatusNotImplemented, "NotImplemented", "A header or query you provided implies functionality that is not implemented: bucket tags"}
		}
		// S3 refuses us-east-1 named as a constraint, and any region but
		// the endpoint's.
		if cfg.LocationConstraint != "" && (cfg.LocationConstraint != b.region || b.region == "us-east-1") {
			return errInvalidLocation
		}
	}
	if err := b.CreateBucket(bucket); err != nil {
		if gofakes3.HasErrorCode(err, gofakes3.ErrBucketAlreadyExists) {
			return errBucketExists
		}
		return err
	}
	w.Header().Set("Location", "/"+bucket)
	w.Header().Set("X-Amz-Bucket-Arn", "arn:aws:s3:::"+bucket)
	w.WriteHeader(http.StatusOK)
	return nil
}

func (b *dirBackend) deleteBucket(w http.ResponseWriter, bucket string) error {
	if err := b.DeleteBucket(bucket); err != nil {
		if gofakes3.HasErrorCode(err, gofakes3.ErrBucketNotEmpty) {
			return errBucketNotEmpty
		}
		return err
	}
	w.WriteHeader(http.StatusNoContent)
	return nil
}

func (b *dirBackend) bucketLocation(w http.ResponseWriter, bucket string) error {
	if _, err := b.bucketPath(bucket); err != nil {
		return err
	}
	// us-east-1 is the empty constraint, as from S3.
	loc := b.region
	if loc == "us-east-1" {
		loc = ""
	}
	writeXML(w, struct {
		XMLName xml.Name `xml:"LocationConstraint"`
		Xmlns   string   `xml:"xmlns,attr"`
		Value   string   `xml:",chardata"`
	}{Xmlns: s3NS, Value: loc})
	return nil
}

func (b *dirBackend) deletePlain(w http.ResponseWriter, r *http.Request, bucket, key string) error {
	var cond func(bool, string) error
	if r.Header.Get("If-Match") != "" {
		cond = putConditions(r.Header)
	}
	match, err := deleteMatch(r.Header)
	if err != nil {
		return err
	}
	if err := b.deleteObject(bucket, key, cond, match); err != nil {
		return err
	}
	w.WriteHeader(http.StatusNoContent)
	return nil
}

func (b *dirBackend) abortUpload(w http.ResponseWriter, r *http.Request, bucket, key string) error {
	id := gofakes3.UploadID(r.URL.Query().Get("uploadId"))
	if v := r.Header.Get("X-Amz-If-Match-Initiated-Time"); v != "" {
		if _, err := b.bucketPath(bucket); err != nil {
			return err
		}
		u, err := b.getUpload(bucket, key, id)
		if err != nil {
			return err
		}
		t, err := http.ParseTime(v)
		if err != nil {
			return invalidArg("x-amz-if-match-initiated-time must be an HTTP date", "x-amz-if-match-initiated-time", v)
		}
		// As S3 does, a date in the future is ignored.
		if !u.initiated.Truncate(time.Second).Equal(t) && !t.After(time.Now()) {
			return errPreconditionFailed
		}
	}
	if err := b.AbortMultipartUpload(bucket, key, id); err != nil {
		return err
	}
	w.WriteHeader(http.StatusNoContent)
	return nil
}

// maxArg parses a max-keys style argument, worded as S3 words its
// refusal.
func maxArg(q url.Values, name string, def int) (int, error) {
	if !q.Has(name) {
		return def, nil
	}
	s := q.Get(name)
	n, err := strconv.ParseInt(s, 10, 32)
	if err != nil {
		return 0, invalidArg("Provided "+s+" not an integer or within integer range", name, s)
	}
	if n < 0 {
		return 0, invalidArg("Argument "+s+" must be an integer between 0 and 2147483647", name, s)
	}
	return int(n), nil
}

// pageArg is a listing's page size argument (max-keys, max-uploads,
// max-parts): 1000 when absent, and S3 never pages more than 1000.
func pageArg(q url.Values, name string) (int, error) {
	n, err := maxArg(q, name, 1000)
	return min(n, 1000), err
}

type listedUpload struct {
	Key               string `xml:"Key"`
	UploadID          string `xml:"UploadId"`
	Initiator         owner  `xml:"Initiator"`
	Owner             owner  `xml:"Owner"`
	StorageClass      string `xml:"StorageClass"`
	Initiated         string `xml:"Initiated"`
	ChecksumAlgorithm string `xml:"ChecksumAlgorithm,omitempty"`
	ChecksumType      string `xml:"ChecksumType,omitempty"`
}

type uploadsResult struct {
	XMLName            xml.Name       `xml:"ListMultipartUploadsResult"`
	Xmlns              string         `xml:"xmlns,attr"`
	Bucket             string         `xml:"Bucket"`
	KeyMarker          string         `xml:"KeyMarker"`
	UploadIDMarker     string         `xml:"UploadIdMarker"`
	NextKeyMarker      string         `xml:"NextKeyMarker,omitempty"`
	NextUploadIDMarker string         `xml:"NextUploadIdMarker,omitempty"`
	Delimiter          string         `xml:"Delimiter,omitempty"`
	Prefix             string         `xml:"Prefix"`
	EncodingType       string         `xml:"EncodingType,omitempty"`
	MaxUploads         int            `xml:"MaxUploads"`
	IsTruncated        bool           `xml:"IsTruncated"`
	Uploads            []listedUpload `xml:"Upload"`
	CommonPrefixes     []commonPrefix `xml:"CommonPrefixes"`
}

// listUploads lists the uploads in progress in key order, those of one
// key oldest first, with common prefixes when a delimiter is given.
// Markers: the listing starts after key-marker; upload-id-marker, which
// must name an upload of key-marker or of the first key after it, starts
// it after that upload.
func (b *dirBackend) listUploads(w http.ResponseWriter, r *http.Request, bucket string) error {
	q, max, enc, err := b.listArgs(r, bucket, "max-uploads")
	if err != nil {
		return err
	}
	pfx, delim := q.Get("prefix"), q.Get("delimiter")
	keyMarker, idMarker := q.Get("key-marker"), q.Get("upload-id-marker")
	if keyMarker == "" {
		idMarker = ""
	}
	b.mp.mu.Lock()
	var ups []*upload
	for _, u := range b.mp.uploads {
		if u.bucket == bucket && strings.HasPrefix(u.key, pfx) && (keyMarker == "" || u.key >= keyMarker) {
			ups = append(ups, u)
		}
	}
	b.mp.mu.Unlock()
	sort.Slice(ups, func(i, j int) bool {
		if ups[i].key != ups[j].key {
			return ups[i].key < ups[j].key
		}
		if !ups[i].initiated.Equal(ups[j].initiated) {
			return ups[i].initiated.Before(ups[j].initiated)
		}
		return ups[i].id < ups[j].id
	})
	start := 0
	if idMarker != "" {
		start = -1
		var first string
		for i, u := range ups {
			if u.key != keyMarker && first == "" {
				first = u.key
			}
			if u.key != keyMarker && u.key != first {
				break
			}
			if string(u.id) == idMarker {
				start = i + 1
				break
			}
		}
		if start < 0 {
			return invalidArg("Invalid uploadId marker", "upload-id-marker", idMarker)
		}
	} else {
		for start < len(ups) && keyMarker != "" && ups[start].key <= keyMarker {
			start++
		}
	}
	res := &uploadsResult{Xmlns: s3NS, Bucket: bucket, KeyMarker: enc(keyMarker), UploadIDMarker: idMarker,
		Delimiter: enc(delim), Prefix: enc(pfx), MaxUploads: max}
	if q.Has("encoding-type") {
		res.EncodingType = "url"
	}
	seen := map[string]bool{}
	// more reports whether anything not yet listed follows ups[i:].
	more := func(i int) bool {
		for ; i < len(ups); i++ {
			if delim == "" {
				return true
			}
			rest := strings.TrimPrefix(ups[i].key, pfx)
			if before, _, ok := strings.Cut(rest, delim); !ok || !seen[pfx+before+delim] {
				return true
			}
		}
		return false
	}
	n := 0
	for i := start; i < len(ups) && max > 0; i++ {
		u := ups[i]
		last := u.key
		if delim != "" {
			if before, _, ok := strings.Cut(strings.TrimPrefix(u.key, pfx), delim); ok {
				cp := pfx + before + delim
				if seen[cp] {
					continue
				}
				seen[cp] = true
				res.CommonPrefixes = append(res.CommonPrefixes, commonPrefix{enc(cp)})
				last = cp
			} else {
				res.Uploads = append(res.Uploads, b.listedUpload(u, enc))
			}
		} else {
			res.Uploads = append(res.Uploads, b.listedUpload(u, enc))
		}
		if n++; n == max {
			if more(i + 1) {
				res.IsTruncated = true
				res.NextKeyMarker, res.NextUploadIDMarker = enc(last), string(u.id)
			}
			break
		}
	}
	writeXML(w, res)
	return nil
}

func (b *dirBackend) listedUpload(u *upload, enc func(string) string) listedUpload {
	return listedUpload{Key: enc(u.key), UploadID: string(u.id), Initiator: owner{b.owner, b.owner}, Owner: owner{b.owner, b.owner},
		StorageClass: "STANDARD", Initiated: s3Time(u.initiated),
		ChecksumAlgorithm: strings.ToUpper(u.checksumAlgo), ChecksumType: u.checksumType}
}

type listedPart struct {
	PartNumber   int    `xml:"PartNumber"`
	LastModified string `xml:"LastModified"`
	ETag         string `xml:"ETag"`
	Size         int64  `xml:"Size"`
	checksums
}

type partsResult struct {
	XMLName              xml.Name     `xml:"ListPartsResult"`
	Xmlns                string       `xml:"xmlns,attr"`
	Bucket               string       `xml:"Bucket"`
	Key                  string       `xml:"Key"`
	UploadID             string       `xml:"UploadId"`
	PartNumberMarker     int          `xml:"PartNumberMarker"`
	NextPartNumberMarker int          `xml:"NextPartNumberMarker"`
	MaxParts             int          `xml:"MaxParts"`
	IsTruncated          bool         `xml:"IsTruncated"`
	Parts                []listedPart `xml:"Part"`
	Initiator            owner        `xml:"Initiator"`
	Owner                owner        `xml:"Owner"`
	StorageClass         string       `xml:"StorageClass"`
	ChecksumAlgorithm    string       `xml:"ChecksumAlgorithm"`
	ChecksumType         string       `xml:"ChecksumType"`
}

func (b *dirBackend) listParts(w http.ResponseWriter, r *http.Request, bucket, key string) error {
	q := r.URL.Query()
	if _, err := b.bucketPath(bucket); err != nil {
		return err
	}
	max, err := pageArg(q, "max-parts")
	if err != nil {
		return err
	}
	marker, err := maxArg(q, "part-number-marker", 0)
	if err != nil {
		return err
	}
	u, err := b.getUpload(bucket, key, gofakes3.UploadID(q.Get("uploadId")))
	if err != nil {
		return err
	}
	res := &partsResult{Xmlns: s3NS, Bucket: bucket, Key: key, UploadID: string(u.id), PartNumberMarker: marker,
		MaxParts: max, Initiator: owner{b.owner, b.owner}, Owner: owner{b.owner, b.owner}, StorageClass: "STANDARD",
		// S3 names no algorithm as "null".
		ChecksumAlgorithm: "null", ChecksumType: "null"}
	if u.checksumAlgo != "" {
		res.ChecksumAlgorithm, res.ChecksumType = strings.ToUpper(u.checksumAlgo), u.checksumType
	}
	b.mp.mu.Lock()
	nums := make([]int, 0, len(u.parts))
	for n := range u.parts {
		if n > marker {
			nums = append(nums, n)
		}
	}
	sort.Ints(nums)
	for _, n := range nums {
		if len(res.Parts) == max {
			res.IsTruncated = true
			break
		}
		p := u.parts[n]
		lp := listedPart{PartNumber: n, LastModified: s3Time(p.mtime), ETag: p.etag, Size: p.size}
		if p.checksum != "" {
			lp.setChecksum(u.checksumAlgo, p.checksum)
		}
		res.Parts = append(res.Parts, lp)
		res.NextPartNumberMarker = n
	}
	b.mp.mu.Unlock()
	writeXML(w, res)
	return nil
}

// deleteMatch checks x-amz-if-match-size and
// x-amz-if-match-last-modified-time of a conditional delete: the object
// must have that size and last-modified time (to the second).
func deleteMatch(h http.Header) (func(fi os.FileInfo) error, error) {
	sz, mt := h.Get("X-Amz-If-Match-Size"), h.Get("X-Amz-If-Match-Last-Modified-Time")
	if sz == "" && mt == "" {
		return nil, nil
	}
	size := int64(-1)
	if sz != "" {
		n, err := strconv.ParseInt(sz, 10, 64)
		if err != nil || n < 0 {
			return nil, invalidArg("x-amz-if-match-size must be a non-negative integer", "x-amz-if-match-size", sz)
		}
		size = n
	}
	var mtime time.Time
	if mt != "" {
		t, err := http.ParseTime(mt)
		if err != nil {
			return nil, invalidArg("x-amz-if-match-last-modified-time must be an HTTP date", "x-amz-if-match-last-modified-time", mt)
		}
		mtime = t
	}
	return func(fi os.FileInfo) error {
		if fi == nil {
			return gofakes3.KeyNotFound("")
		}
		if size >= 0 && fi.Size() != size || !mtime.IsZero() && !fi.ModTime().Truncate(time.Second).Equal(mtime) {
			return errPreconditionFailed
		}
		return nil
	}, nil
}
