package s3server

import (
	"encoding/xml"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"
)

// ListObjects (V1 and V2) and ListBuckets, served here so that listings
// carry what S3's do: checksum algorithms, the owner asked for, markers
// and tokens as S3 pages them, url-encoded keys when asked.

const s3NS = "http://s3.amazonaws.com/doc/2006-03-01/"

type owner struct {
	ID          string `xml:"ID"`
	DisplayName string `xml:"DisplayName"`
}

type listedObject struct {
	Key               string   `xml:"Key"`
	LastModified      string   `xml:"LastModified"`
	ETag              string   `xml:"ETag"`
	Size              int64    `xml:"Size"`
	StorageClass      string   `xml:"StorageClass"`
	ChecksumAlgorithm []string `xml:"ChecksumAlgorithm,omitempty"`
	ChecksumType      string   `xml:"ChecksumType,omitempty"`
	Owner             *owner   `xml:"Owner,omitempty"`
}

type commonPrefix struct {
	Prefix string `xml:"Prefix"`
}

type listResult struct {
	XMLName               xml.Name       `xml:"ListBucketResult"`
	Xmlns                 string         `xml:"xmlns,attr"`
	Name                  string         `xml:"Name"`
	Prefix                *string        `xml:"Prefix"`
	Marker                *string        `xml:"Marker"`
	NextMarker            string         `xml:"NextMarker,omitempty"`
	StartAfter            *string        `xml:"StartAfter"`
	ContinuationToken     *string        `xml:"ContinuationToken"`
	NextContinuationToken string         `xml:"NextContinuationToken,omitempty"`
	KeyCount              *int           `xml:"KeyCount"`
	MaxKeys               int            `xml:"MaxKeys"`
	Delimiter             *string        `xml:"Delimiter"`
	EncodingType          string         `xml:"EncodingType,omitempty"`
	IsTruncated           bool           `xml:"IsTruncated"`
	Contents              []listedObject `xml:"Contents"`
	CommonPrefixes        []commonPrefix `xml:"CommonPrefixes"`
}

func s3Time(t time.Time) string { return t.UTC().Format("2006-01-02T15:04:05.000Z") }

func invalidArg(msg, name, value string) error {
	return &authError{status: http.StatusBadRequest, code: "InvalidArgument", msg: msg, fields: []string{"ArgumentName", name, "ArgumentValue", value}}
}

// optional is a query parameter as an element: absent when not sent.
func optional(q url.Values, k string, enc func(string) string) *string {
	if !q.Has(k) {
		return nil
	}
	v := enc(q.Get(k))
	return &v
}

// keyEncoder is the encoding-type a listing asks for: keys and prefixes
// url-encoded (slashes kept, as S3 does), or as they are.
func keyEncoder(q url.Values) (func(string) string, error) {
	switch e := q.Get("encoding-type"); {
	case e == "":
		return func(s string) string { return s }, nil
	case strings.EqualFold(e, "url"):
		return func(s string) string { return strings.ReplaceAll(url.QueryEscape(s), "%2F", "/") }, nil
	default:
		return nil, invalidArg("Invalid Encoding Method specified in Request", "encoding-type", e)
	}
}

// listArgs checks a listing's bucket and reads the arguments listings
// share: the page size (its name is the listing's) and the key encoding.
func (b *dirBackend) listArgs(r *http.Request, bucket, maxName string) (q url.Values, max int, enc func(string) string, err error) {
	q = r.URL.Query()
	if _, err = b.bucketPath(bucket); err != nil {
		return nil, 0, nil, err
	}
	if max, err = pageArg(q, maxName); err != nil {
		return nil, 0, nil, err
	}
	if enc, err = keyEncoder(q); err != nil {
		return nil, 0, nil, err
	}
	return q, max, enc, nil
}

func (b *dirBackend) listObjects(w http.ResponseWriter, r *http.Request, bucket string) error {
	q, max, enc, err := b.listArgs(r, bucket, "max-keys")
	if err != nil {
		return err
	}
	v2 := q.Get("list-type") == "2"
	pfx, delim := q.Get("prefix"), q.Get("delimiter")
	marker := q.Get("marker")
	if v2 {
		marker = q.Get("start-after")
		if t := q.Get("continuation-token"); t > marker {
			// The token is the last key of the previous page; a
			// start-after past it still holds.
			marker = t
		}
	}
	entries, truncated, err := b.list(bucket, pfx, delim, marker, int64(max))
	if err != nil {
		return err
	}
	res := &listResult{Xmlns: s3NS, Name: bucket, MaxKeys: max, IsTruncated: truncated,
		Prefix: optional(q, "prefix", enc), Delimiter: optional(q, "delimiter", enc)}
	if q.Has("encoding-type") {
		res.EncodingType = "url"
	}
	withOwner := !v2 || strings.EqualFold(q.Get("fetch-owner"), "true")
	for _, e := range entries {
		if e.prefix {
			res.CommonPrefixes = append(res.CommonPrefixes, commonPrefix{enc(e.name)})
			continue
		}
		o := listedObject{Key: enc(e.name), LastModified: s3Time(e.mtime), ETag: e.etag, Size: e.size, StorageClass: "STANDARD"}
		if e.meta != nil && e.meta.Checksum != "" {
			o.ChecksumAlgorithm, o.ChecksumType = []string{strings.ToUpper(e.meta.ChecksumAlgo)}, e.meta.ChecksumType
		}
		if withOwner {
			o.Owner = &owner{b.owner, b.owner}
		}
		res.Contents = append(res.Contents, o)
	}
	last := ""
	if len(entries) > 0 {
		last = entries[len(entries)-1].name
	}
	if v2 {
		n := len(entries)
		res.KeyCount = &n
		res.StartAfter = optional(q, "start-after", enc)
		res.ContinuationToken = optional(q, "continuation-token", func(s string) string { return s })
		if truncated {
			res.NextContinuationToken = last
		}
	} else {
		res.Marker = optional(q, "marker", enc)
		if truncated {
			res.NextMarker = enc(last)
		}
	}
	writeXML(w, res)
	return nil
}

type bucketsResult struct {
	XMLName           xml.Name       `xml:"ListAllMyBucketsResult"`
	Xmlns             string         `xml:"xmlns,attr"`
	Owner             owner          `xml:"Owner"`
	Buckets           []listedBucket `xml:"Buckets>Bucket"`
	ContinuationToken string         `xml:"ContinuationToken,omitempty"`
	Prefix            *string        `xml:"Prefix"`
}

type listedBucket struct {
	Name         string `xml:"Name"`
	CreationDate string `xml:"CreationDate"`
	BucketRegion string `xml:"BucketRegion"`
}

func (b *dirBackend) listBuckets(w http.ResponseWriter, r *http.Request) error {
	q := r.URL.Query()
	max := 10000
	if q.Has("max-buckets") {
		n, err := strconv.Atoi(q.Get("max-buckets"))
		if err != nil || n < 1 || n > 10000 {
			return invalidArg("Argument max-buckets must be an integer between 1 and 10000.", "max-buckets", q.Get("max-buckets"))
		}
		max = n
	}
	all, err := b.ListBuckets() // sorted by name: os.ReadDir sorts
	if err != nil {
		return err
	}
	res := &bucketsResult{Xmlns: s3NS, Owner: owner{b.owner, b.owner}, Prefix: optional(q, "prefix", func(s string) string { return s })}
	after := q.Get("continuation-token")
	for _, bk := range all {
		if !strings.HasPrefix(bk.Name, q.Get("prefix")) || after != "" && bk.Name <= after {
			continue
		}
		if len(res.Buckets) == max {
			res.ContinuationToken = res.Buckets[len(res.Buckets)-1].Name
			break
		}
		res.Buckets = append(res.Buckets, listedBucket{Name: bk.Name, CreationDate: s3Time(bk.CreationDate.Time), BucketRegion: b.region})
	}
	writeXML(w, res)
	return nil
}
