package store

import (
	"bytes"
	"context"
	"encoding/xml"
	"errors"
	"io"
	"net/http"
	"strings"

	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/smithy-go"
	"github.com/aws/smithy-go/middleware"
	smithyhttp "github.com/aws/smithy-go/transport/http"
)

// A bucket lives in one region, and a request signed for (or sent to)
// another is refused with the right region named: a 301 PermanentRedirect
// with an x-amz-bucket-region header, or a 400 AuthorizationHeaderMalformed
// with <Region> in its body. The aws CLI and boto3 follow that answer and
// retry; the Go SDK does not, so the driver does, as they do: once per
// request, remembering the region for every later one.

const bucketRegionHeader = "X-Amz-Bucket-Region"

// regionHint copies the <Region> an error body names into the
// x-amz-bucket-region header, before the SDK's deserializer consumes the
// body, so the error the caller gets still carries it.
var regionHint = middleware.DeserializeMiddlewareFunc("sluiceRegionHint",
	func(ctx context.Context, in middleware.DeserializeInput, next middleware.DeserializeHandler) (middleware.DeserializeOutput, middleware.Metadata, error) {
		out, md, err := next.HandleDeserialize(ctx, in)
		resp, ok := out.RawResponse.(*smithyhttp.Response)
		if !ok || resp == nil || resp.Body == nil || !regionAnswer(resp.StatusCode) || resp.Header.Get(bucketRegionHeader) != "" {
			return out, md, err
		}
		head, rerr := io.ReadAll(io.LimitReader(resp.Body, maxErrorBody))
		if rerr != nil {
			return out, md, err
		}
		resp.Body = readCloser{io.MultiReader(bytes.NewReader(head), resp.Body), resp.Body}
		if r := errorBodyRegion(head); r != "" {
			resp.Header.Set(bucketRegionHeader, r)
		}
		return out, md, err
	})

// maxErrorBody bounds what is read of an error body to find a region: S3's
// are a few hundred bytes.
const maxErrorBody = 16 << 10

type readCloser struct {
	io.Reader
	io.Closer
}

func addRegionHint(stack *middleware.Stack) error {
	return stack.Deserialize.Insert(regionHint, "OperationDeserializer", middleware.After)
}

// regionAnswer reports whether a status is one S3 uses to name a bucket's
// region: 301 and 307 redirects, and 400 for a wrongly scoped signature.
func regionAnswer(status int) bool {
	return status == http.StatusMovedPermanently || status == http.StatusTemporaryRedirect || status == http.StatusBadRequest
}

// errorBodyRegion is the <Region> of an S3 error document, or "".
func errorBodyRegion(body []byte) string {
	var doc struct {
		Region string `xml:"Region"`
	}
	if xml.Unmarshal(body, &doc) != nil {
		return ""
	}
	r := strings.TrimSpace(doc.Region)
	if !validRegion(r) {
		return ""
	}
	return r
}

// validRegion keeps what a server says to names a region can have
// (letters, digits, '-'), since it becomes part of a host name.
func validRegion(r string) bool {
	if r == "" || len(r) > 64 {
		return false
	}
	for _, c := range r {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-') {
			return false
		}
	}
	return true
}

// wrongRegion reports whether err is the server's answer that the bucket
// lives in another region, and the region it names ("" when it names none).
func wrongRegion(err error) (region string, ok bool) {
	var re *smithyhttp.ResponseError
	if !errors.As(err, &re) || re.Response == nil {
		return "", false
	}
	status := re.HTTPStatusCode()
	if !regionAnswer(status) {
		return "", false
	}
	region = re.Response.Header.Get(bucketRegionHeader)
	if !validRegion(region) {
		region = ""
	}
	var ae smithy.APIError
	code := ""
	if errors.As(err, &ae) {
		code = ae.ErrorCode()
	}
	switch {
	case status == http.StatusMovedPermanently, status == http.StatusTemporaryRedirect,
		code == "PermanentRedirect", code == "AuthorizationHeaderMalformed", code == "IllegalLocationConstraintException":
		return region, true
	case status == http.StatusBadRequest && region != "":
		// A HEAD has no body to carry a code: a 400 that names a region is
		// the same answer.
		return region, true
	}
	return "", false
}

// region is the region requests are signed for now.
func (d *s3Driver) region() string { return d.c().Options().Region }

// follow switches the driver to the region err names, if it is the
// server's "wrong region" answer to a request made with client c. It
// reports whether the request is worth making again.
func (d *s3Driver) follow(ctx context.Context, c *s3.Client, err error) bool {
	region, ok := wrongRegion(err)
	if !ok {
		return false
	}
	d.regionMu.Lock()
	defer d.regionMu.Unlock()
	if now := d.c(); now != c {
		return true // another request already moved the driver
	}
	if region == "" {
		region = d.askRegion(ctx, c)
	}
	if region == "" || region == c.Options().Region {
		return false
	}
	d.cur.Store(s3.New(c.Options(), func(o *s3.Options) { o.Region = region }))
	return true
}

// askRegion learns the bucket's region from a HEAD of the bucket, which S3
// answers with x-amz-bucket-region whatever the region it was signed for.
func (d *s3Driver) askRegion(ctx context.Context, c *s3.Client) string {
	out, err := c.HeadBucket(ctx, &s3.HeadBucketInput{Bucket: &d.bucket})
	if err == nil {
		if r := out.BucketRegion; r != nil && validRegion(*r) {
			return *r
		}
		return ""
	}
	r, _ := wrongRegion(err)
	return r
}

// call makes a request with the driver's current client and, if the
// server answers that the bucket lives in another region, makes it once
// more there. op must build its input afresh on each call (a body reader
// is consumed by the first try).
func call[T any](ctx context.Context, d *s3Driver, op func(*s3.Client) (T, error)) (T, error) {
	c := d.c()
	out, err := op(c)
	if err != nil && d.follow(ctx, c, err) {
		out, err = op(d.c())
	}
	return out, err
}
