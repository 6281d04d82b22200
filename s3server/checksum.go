package s3server

import (
	"crypto/md5"
	"crypto/sha1"
	"crypto/sha256"
	"crypto/sha512"
	"encoding/base64"
	"hash"
	"hash/crc32"
	"hash/crc64"
	"net/http"
	"strings"

	"github.com/cespare/xxhash/v2"
	"github.com/zeebo/xxh3"
)

// S3's flexible checksums: a client names one algorithm and sends the
// value in a header (x-amz-checksum-crc32: <base64>) or, with aws-chunked
// bodies, in a trailer after the data. The server computes it over the
// body, refuses the write when it differs (400 BadDigest), stores it and
// returns it with the object when asked (x-amz-checksum-mode: ENABLED).

var checksumAlgos = []string{"crc32", "crc32c", "crc64nvme", "md5", "sha1", "sha256", "sha512", "xxhash64", "xxhash3", "xxhash128"}

// errUnknownAlgo is S3's answer to an algorithm it does not know.
var errUnknownAlgo = &s3Error{http.StatusBadRequest, "InvalidRequest", "Checksum algorithm provided is unsupported. Please try again with any of the valid types: [CRC32, CRC32C, CRC64NVME, MD5, SHA1, SHA256, SHA512, XXHASH128, XXHASH3, XXHASH64]"}

// fullObjectOK and compositeOK say which multipart checksum types an
// algorithm supports: a whole-object value needs a combinable CRC.
func fullObjectOK(algo string) bool { return strings.HasPrefix(algo, "crc") }
func compositeOK(algo string) bool  { return algo != "crc64nvme" }

// defaultChecksum is the one S3 keeps of objects written without one.
const defaultChecksum = "crc64nvme"

// crc64NVME is the NVMe polynomial in the reversed form crc64.MakeTable
// takes.
const crc64NVME = 0x9a6c9329ac4bc9b5

var (
	crc32cTable    = crc32.MakeTable(crc32.Castagnoli)
	crc64NVMETable = crc64.MakeTable(crc64NVME)
)

func newChecksum(algo string) hash.Hash {
	switch algo {
	case "crc32":
		return crc32.NewIEEE()
	case "crc32c":
		return crc32.New(crc32cTable)
	case "crc64nvme":
		return crc64.New(crc64NVMETable)
	case "md5":
		return md5.New()
	case "sha1":
		return sha1.New()
	case "sha256":
		return sha256.New()
	case "sha512":
		return sha512.New()
	case "xxhash64":
		return xxhash.New()
	case "xxhash3":
		return xxh3.New()
	case "xxhash128":
		return xxh3.New128()
	}
	return nil
}

// checksumReq is the checksum a write asks for: the algorithm, and the
// expected value when the client sent one (in a header, or announced in
// x-amz-trailer and read from r.Trailer at the end of the body).
type checksumReq struct {
	algo    string
	want    string
	sent    bool // the value came in a header
	trailer bool
}

// checksumOf reads the checksum headers of a write. An unknown algorithm,
// or two of them, is InvalidRequest.
func checksumOf(r *http.Request) (*checksumReq, error) {
	var c *checksumReq
	for _, a := range checksumAlgos {
		// Present, even empty: an empty value is an invalid one.
		if vs, ok := r.Header[http.CanonicalHeaderKey("X-Amz-Checksum-"+a)]; ok {
			if c != nil {
				return nil, &s3Error{http.StatusBadRequest, "InvalidRequest", "Expecting a single x-amz-checksum- header. Multiple checksum Types are not allowed."}
			}
			c = &checksumReq{algo: a, want: vs[0], sent: true}
		}
	}
	if t := strings.ToLower(strings.TrimSpace(r.Header.Get("X-Amz-Trailer"))); t != "" {
		a, ok := strings.CutPrefix(t, "x-amz-checksum-")
		if !ok || newChecksum(a) == nil {
			return nil, &s3Error{http.StatusBadRequest, "InvalidRequest", "The value specified in the x-amz-trailer header is not supported"}
		}
		if c != nil {
			return nil, &s3Error{http.StatusBadRequest, "InvalidRequest", "Expecting a single x-amz-checksum- header. Multiple checksum Types are not allowed."}
		}
		c = &checksumReq{algo: a, trailer: true}
	}
	sdk := strings.ToLower(r.Header.Get("X-Amz-Sdk-Checksum-Algorithm"))
	if sdk == "" {
		sdk = strings.ToLower(r.Header.Get("X-Amz-Checksum-Algorithm"))
	}
	if sdk != "" {
		if newChecksum(sdk) == nil {
			return nil, errUnknownAlgo
		}
		if c == nil {
			c = &checksumReq{algo: sdk}
		} else if c.algo != sdk {
			return nil, &s3Error{http.StatusBadRequest, "InvalidRequest", "Value for x-amz-sdk-checksum-algorithm header is invalid."}
		}
	}
	if c != nil && c.sent {
		if b, err := base64.StdEncoding.DecodeString(c.want); err != nil || len(b) != newChecksum(c.algo).Size() {
			return nil, &s3Error{http.StatusBadRequest, "InvalidRequest", "Value for x-amz-checksum-" + c.algo + " header is invalid."}
		}
	}
	return c, nil
}

// check compares the computed sum with the expected one, once the body
// has been read (trailers are known only then).
func (c *checksumReq) check(r *http.Request, sum []byte) (string, error) {
	got := base64.StdEncoding.EncodeToString(sum)
	want := c.want
	if c.trailer {
		want = r.Trailer.Get("X-Amz-Checksum-" + c.algo)
		if b, err := base64.StdEncoding.DecodeString(want); err != nil || len(b) != len(sum) {
			return "", &s3Error{http.StatusBadRequest, "InvalidRequest", "Value for x-amz-checksum-" + c.algo + " trailing header is invalid."}
		}
	}
	if want != "" && want != got {
		return "", &s3Error{http.StatusBadRequest, "BadDigest", "The " + strings.ToUpper(c.algo) + " you specified did not match the calculated checksum."}
	}
	return got, nil
}
