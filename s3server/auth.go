package s3server

import (
	"bufio"
	"crypto/hmac"
	"crypto/sha1"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/xml"
	"errors"
	"fmt"
	"github.com/aws/aws-sdk-go-v2/aws"
	v4 "github.com/aws/aws-sdk-go-v2/aws/signer/v4"
	"hash"
	"io"
	"net/http"
	"net/url"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"
)

// Every request is authenticated here, against the server's one key pair:
// AWS Signature Version 4 in the Authorization header or a presigned URL
// (checked by re-signing what arrived with aws-sdk-go-v2's signer and
// comparing), Version 2 (what `aws s3 presign` and boto3 make), and the
// payload modes S3 clients use (hex SHA-256, UNSIGNED-PAYLOAD and the
// aws-chunked streaming encodings). The chunk and trailer signatures of
// aws-chunked bodies are chained HMACs computed here as the body streams:
// the SDK's StreamSigner wants each chunk whole in memory.

const (
	sigAlgorithm     = "AWS4-HMAC-SHA256"
	amzDateFormat    = "20060102T150405Z"
	unsignedPayload  = "UNSIGNED-PAYLOAD"
	streamingSigned  = "STREAMING-AWS4-HMAC-SHA256-PAYLOAD"
	streamingTrailer = "STREAMING-UNSIGNED-PAYLOAD-TRAILER"
	streamingSignedT = "STREAMING-AWS4-HMAC-SHA256-PAYLOAD-TRAILER"
	emptySHA256      = "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"
	maxClockSkew     = 15 * time.Minute
)

// authError is a rejected request, answered the way S3 answers it.
type authError struct {
	status int
	code   string
	msg    string
	fields []string // further elements of the error: name, value, ...
	region string   // the region to sign for, when the request named another
}

func (e *authError) Error() string { return e.code + ": " + e.msg }

// writeError answers a request with an S3 error. The body the client may
// still be sending is not read: the connection closes after the answer.
func writeError(w http.ResponseWriter, r *http.Request, status int, code, msg string, fields ...string) {
	dropBody(w, r)
	w.Header().Set("Content-Type", "application/xml")
	w.Header().Del("Content-Length")
	w.WriteHeader(status)
	if r.Method == http.MethodHead {
		return
	}
	var b strings.Builder
	b.WriteString(`<?xml version="1.0" encoding="UTF-8"?>` + "\n<Error><Code>")
	xml.EscapeText(&b, []byte(code))
	b.WriteString("</Code><Message>")
	xml.EscapeText(&b, []byte(msg))
	b.WriteString("</Message>")
	for i := 0; i+1 < len(fields); i += 2 {
		b.WriteString("<" + fields[i] + ">")
		xml.EscapeText(&b, []byte(fields[i+1]))
		b.WriteString("</" + fields[i] + ">")
	}
	b.WriteString("</Error>")
	io.WriteString(w, b.String())
}

type verifier struct {
	accessKey, secretKey string
	region               string
	now                  func() time.Time
}

func (v *verifier) wrap(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		// A CORS preflight is never signed; it reads nothing.
		if r.Method != http.MethodOptions {
			if err := v.verify(r); err != nil {
				var ae *authError
				if !errors.As(err, &ae) {
					ae = &authError{status: http.StatusForbidden, code: "AccessDenied", msg: err.Error()}
				}
				if ae.region != "" {
					// As S3 does: a HEAD has no body to name it in.
					w.Header().Set("X-Amz-Bucket-Region", ae.region)
				}
				writeError(w, r, ae.status, ae.code, ae.msg, ae.fields...)
				return
			}
		}
		next.ServeHTTP(w, r)
	})
}

type credential struct {
	accessKey, date, region, service string
}

func (c credential) scope() string {
	return c.date + "/" + c.region + "/" + c.service + "/aws4_request"
}

// The errors below are worded as S3 words them: clients and conformance
// suites match on them.

func malformed(format string, a ...any) error {
	return &authError{status: http.StatusBadRequest, code: "AuthorizationHeaderMalformed", msg: fmt.Sprintf(format, a...)}
}

// credError is a malformed credential, in the header's or the query's
// wording.
func credError(query bool, format string, a ...any) error {
	if query {
		return &authError{status: http.StatusBadRequest, code: "AuthorizationQueryParametersError",
			msg: "Error parsing the X-Amz-Credential parameter; " + fmt.Sprintf(format, a...)}
	}
	return malformed("The authorization header is malformed; "+format, a...)
}

func invalidArgument(msg, name, value string) error {
	return &authError{status: http.StatusBadRequest, code: "InvalidArgument", msg: msg, fields: []string{"ArgumentName", name, "ArgumentValue", value}}
}

func queryError(msg string) error {
	return &authError{status: http.StatusBadRequest, code: "AuthorizationQueryParametersError", msg: msg}
}

var errNoDate = &authError{status: http.StatusForbidden, code: "AccessDenied", msg: "AWS authentication requires a valid Date or x-amz-date header."}

func parseCredential(s string, query bool) (credential, error) {
	parts := strings.Split(s, "/")
	if len(parts) != 5 {
		return credential{}, credError(query, `the Credential is mal-formed; expecting "<YOUR-AKID>/YYYYMMDD/REGION/SERVICE/aws4_request".`)
	}
	c := credential{accessKey: parts[0], date: parts[1], region: parts[2], service: parts[3]}
	// In S3's order: the terminal, the service, then the date.
	if parts[4] != "aws4_request" {
		return credential{}, credError(query, `incorrect terminal %q. This endpoint uses "aws4_request".`, parts[4])
	}
	if c.service != "s3" {
		return credential{}, credError(query, `incorrect service %q. This endpoint belongs to "s3".`, c.service)
	}
	if _, err := time.Parse("20060102", c.date); err != nil {
		return credential{}, credError(query, `incorrect date format %q. This date in the credential must be in the format "yyyyMMdd".`, c.date)
	}
	return c, nil
}

var errInvalidToken = &authError{status: http.StatusBadRequest, code: "InvalidToken", msg: "The provided token is malformed or otherwise invalid."}

func (v *verifier) verify(r *http.Request) error {
	// The server's one key pair is permanent: no session token is valid.
	if r.Header.Get("X-Amz-Security-Token") != "" || r.URL.Query().Has("X-Amz-Security-Token") {
		return errInvalidToken
	}
	if auth := r.Header.Get("Authorization"); auth != "" {
		if rest, ok := strings.CutPrefix(auth, "AWS "); ok {
			return v.verifyV2(r, rest, false)
		}
		return v.verifyHeader(r, auth)
	}
	q := r.URL.Query()
	if q.Has("X-Amz-Signature") || q.Has("X-Amz-Algorithm") || q.Has("X-Amz-Credential") {
		return v.verifyPresigned(r)
	}
	if q.Has("Signature") && q.Has("AWSAccessKeyId") {
		return v.verifyV2(r, q.Get("AWSAccessKeyId")+":"+q.Get("Signature"), true)
	}
	return &authError{status: http.StatusForbidden, code: "AccessDenied", msg: "Access Denied"}
}

// checkRegion refuses a request signed for another region, naming the
// right one: SDKs and the aws CLI retry with it.
func (v *verifier) checkRegion(c credential, query bool) error {
	if c.region == v.region {
		return nil
	}
	if query {
		e := credError(true, "the region %q is wrong; expecting %q", c.region, v.region).(*authError)
		e.region = v.region
		return e
	}
	e := malformed("The authorization header is malformed; the region %q is wrong; expecting %q", c.region, v.region).(*authError)
	e.fields = []string{"Region", v.region}
	e.region = v.region
	return e
}

func (v *verifier) checkKey(c credential) error {
	if !hmac.Equal([]byte(c.accessKey), []byte(v.accessKey)) {
		return &authError{status: http.StatusForbidden, code: "InvalidAccessKeyId",
			msg: "The AWS Access Key Id you provided does not exist in our records.", fields: []string{"AWSAccessKeyId", c.accessKey}}
	}
	return nil
}

var errSignature = &authError{status: http.StatusForbidden, code: "SignatureDoesNotMatch",
	msg: "The request signature we calculated does not match the signature you provided. Check your key and signing method."}

// checkSignedHeaders refuses x-amz- headers the signature does not cover:
// they would change what the request does unsigned.
func checkSignedHeaders(r *http.Request, signed []string) error {
	var missing []string
	for k := range r.Header {
		lk := strings.ToLower(k)
		if strings.HasPrefix(lk, "x-amz-") && !slices.Contains(signed, lk) {
			missing = append(missing, lk)
		}
	}
	if len(missing) == 0 {
		return nil
	}
	sort.Strings(missing)
	return &authError{status: http.StatusForbidden, code: "AccessDenied", msg: "There were headers present in the request which were not signed",
		fields: []string{"HeadersNotSigned", strings.Join(missing, ", ")}}
}

func validPayload(p string) bool {
	switch p {
	case unsignedPayload, streamingSigned, streamingTrailer, streamingSignedT:
		return true
	}
	return len(p) == 64 && strings.Trim(p, "0123456789abcdef") == ""
}

func (v *verifier) verifyHeader(r *http.Request, auth string) error {
	alg, rest, ok := strings.Cut(auth, " ")
	if !ok || strings.Contains(strings.TrimSpace(rest), " ") && !strings.Contains(rest, ",") {
		return invalidArgument("Authorization header is invalid -- one and only one ' ' (space) required.", "Authorization", auth)
	}
	if alg != sigAlgorithm {
		return invalidArgument("Unsupported Authorization Type", "Authorization", alg)
	}
	var credStr, signedStr, sig string
	comps := strings.Split(rest, ",")
	if len(comps) < 3 {
		return malformed("The authorization header is malformed; the authorization header requires three components: Credential, SignedHeaders, and Signature.")
	}
	for _, f := range comps {
		f = strings.TrimSpace(f)
		k, val, ok := strings.Cut(f, "=")
		if !ok {
			return malformed("The authorization header is malformed; the authorization component %q is malformed.", f)
		}
		switch k {
		case "Credential":
			credStr = val
		case "SignedHeaders":
			signedStr = val
		case "Signature":
			sig = val
		}
	}
	switch {
	case credStr == "":
		return malformed("The authorization header is malformed; missing Credential.")
	case signedStr == "":
		return malformed("The authorization header is malformed; missing SignedHeaders.")
	case sig == "":
		return malformed("The authorization header is malformed; missing Signature.")
	}
	c, err := parseCredential(credStr, false)
	if err != nil {
		return err
	}
	if err := v.checkKey(c); err != nil {
		return err
	}
	if err := v.checkRegion(c, false); err != nil {
		return err
	}
	amzDate := r.Header.Get("X-Amz-Date")
	t, err := time.Parse(amzDateFormat, amzDate)
	if err != nil {
		return errNoDate
	}
	if amzDate[:8] != c.date {
		return malformed("The authorization header is malformed; The authorization header is malformed; Invalid credential date. Date is not the same as X-Amz-Date.")
	}
	if d := v.now().Sub(t); d > maxClockSkew || d < -maxClockSkew {
		return &authError{status: http.StatusForbidden, code: "RequestTimeTooSkewed", msg: "The difference between the request time and the current time is too large."}
	}
	payload := r.Header.Get("X-Amz-Content-Sha256")
	if payload == "" {
		return &authError{status: http.StatusBadRequest, code: "InvalidRequest", msg: "Missing required header for this request: x-amz-content-sha256"}
	}
	if !validPayload(payload) {
		return invalidArgument("x-amz-content-sha256 must be UNSIGNED-PAYLOAD, STREAMING-UNSIGNED-PAYLOAD-TRAILER, STREAMING-AWS4-HMAC-SHA256-PAYLOAD, STREAMING-AWS4-HMAC-SHA256-PAYLOAD-TRAILER, STREAMING-AWS4-ECDSA-P256-SHA256-PAYLOAD, STREAMING-AWS4-ECDSA-P256-SHA256-PAYLOAD-TRAILER or a valid sha256 value.",
			"x-amz-content-sha256", payload)
	}
	signed := strings.Split(signedStr, ";")
	want, err := v.resign(r, c, signed, payload, t, false)
	if err != nil || !hmac.Equal([]byte(want), []byte(sig)) {
		return errSignature
	}
	key := signingKey(v.secretKey, c)
	if err := checkSignedHeaders(r, signed); err != nil {
		return err
	}
	return wrapPayload(r, payload, &chunkSigner{key: key, amzDate: amzDate, scope: c.scope(), prev: sig})
}

func (v *verifier) verifyPresigned(r *http.Request) error {
	q := r.URL.Query()
	for _, p := range []string{"X-Amz-Algorithm", "X-Amz-Credential", "X-Amz-Signature", "X-Amz-Date", "X-Amz-SignedHeaders", "X-Amz-Expires"} {
		if !q.Has(p) {
			return queryError("Query-string authentication version 4 requires the X-Amz-Algorithm, X-Amz-Credential, X-Amz-Signature, X-Amz-Date, X-Amz-SignedHeaders, and X-Amz-Expires parameters.")
		}
	}
	switch q.Get("X-Amz-Algorithm") {
	case sigAlgorithm:
	case "AWS4-ECDSA-P256-SHA256":
		return queryError(`X-Amz-Algorithm only supports "AWS4-HMAC-SHA256"`)
	default:
		return queryError(`X-Amz-Algorithm only supports "AWS4-HMAC-SHA256 and AWS4-ECDSA-P256-SHA256"`)
	}
	c, err := parseCredential(q.Get("X-Amz-Credential"), true)
	if err != nil {
		return err
	}
	amzDate := q.Get("X-Amz-Date")
	t, err := time.Parse(amzDateFormat, amzDate)
	if err != nil {
		return queryError(`X-Amz-Date must be in the ISO8601 Long Format "yyyyMMdd'T'HHmmss'Z'"`)
	}
	if amzDate[:8] != c.date {
		return queryError(fmt.Sprintf("Invalid credential date %q. This date is not the same as X-Amz-Date: %q.", c.date, amzDate[:8]))
	}
	expires, err := strconv.Atoi(q.Get("X-Amz-Expires"))
	switch {
	case err != nil:
		return queryError("X-Amz-Expires should be a number")
	case expires < 0:
		return queryError("X-Amz-Expires must be non-negative")
	case expires > 7*24*3600:
		return queryError("X-Amz-Expires must be less than a week (in seconds); that is, the given X-Amz-Expires must be less than 604800 seconds")
	}
	if err := v.checkKey(c); err != nil {
		return err
	}
	if err := v.checkRegion(c, true); err != nil {
		return err
	}
	now := v.now()
	if end := t.Add(time.Duration(expires) * time.Second); now.After(end) {
		return &authError{status: http.StatusForbidden, code: "AccessDenied", msg: "Request has expired.",
			fields: []string{"X-Amz-Expires", strconv.Itoa(expires), "Expires", end.UTC().Format(time.RFC3339), "ServerTime", now.UTC().Format(time.RFC3339)}}
	}
	if t.Sub(now) > maxClockSkew {
		return &authError{status: http.StatusForbidden, code: "AccessDenied", msg: "Request is not valid yet"}
	}
	payload := q.Get("X-Amz-Content-Sha256")
	if payload == "" {
		payload = unsignedPayload
	}
	signed := strings.Split(q.Get("X-Amz-SignedHeaders"), ";")
	want, err := v.resign(r, c, signed, payload, t, true)
	if err != nil || !hmac.Equal([]byte(want), []byte(q.Get("X-Amz-Signature"))) {
		return errSignature
	}
	if err := checkSignedHeaders(r, signed); err != nil {
		return err
	}
	return wrapPayload(r, payload, nil)
}

func hmacSHA256(key []byte, s string) []byte {
	h := hmac.New(sha256.New, key)
	h.Write([]byte(s))
	return h.Sum(nil)
}

func sha256Hex(s string) string {
	sum := sha256.Sum256([]byte(s))
	return hex.EncodeToString(sum[:])
}

func signingKey(secret string, c credential) []byte {
	k := hmacSHA256([]byte("AWS4"+secret), c.date)
	k = hmacSHA256(k, c.region)
	k = hmacSHA256(k, c.service)
	return hmacSHA256(k, "aws4_request")
}

// resign signs, with aws-sdk-go-v2's signer, a copy of what arrived made
// of what the client signed (method, path exactly as sent, query, the
// headers it lists), with our secret for its credential and time, and
// returns the signature. The signer computing what it computed means the
// client holds the secret.
func (v *verifier) resign(r *http.Request, c credential, signed []string, payload string, t time.Time, presigned bool) (string, error) {
	// The path exactly as sent: S3 signs it without re-encoding.
	uri := r.RequestURI
	if i := strings.IndexByte(uri, '?'); i >= 0 {
		uri = uri[:i]
	}
	if !strings.HasPrefix(uri, "/") {
		uri = r.URL.EscapedPath()
	}
	q := r.URL.Query()
	if presigned {
		// The signer adds these itself, from the credential and time.
		for _, k := range []string{"X-Amz-Signature", "X-Amz-Algorithm", "X-Amz-Credential", "X-Amz-Date", "X-Amz-SignedHeaders"} {
			q.Del(k)
		}
	}
	req := &http.Request{
		Method: r.Method,
		URL:    &url.URL{Scheme: "http", Host: r.Host, Opaque: "//" + r.Host + uri, RawQuery: q.Encode()},
		Host:   r.Host,
		Header: http.Header{},
	}
	for _, h := range signed {
		switch h {
		case "host":
		case "content-length":
			n := r.ContentLength
			if vs := r.Header.Values(h); len(vs) > 0 {
				n, _ = strconv.ParseInt(vs[0], 10, 64)
			}
			req.ContentLength = n
		default:
			if vs := r.Header.Values(h); len(vs) > 0 {
				req.Header[http.CanonicalHeaderKey(h)] = slices.Clone(vs)
			}
		}
	}
	creds := aws.Credentials{AccessKeyID: c.accessKey, SecretAccessKey: v.secretKey}
	opts := func(o *v4.SignerOptions) {
		o.DisableURIPathEscaping = true // S3 signs the path as sent
		o.DisableHeaderHoisting = true  // the client signed them as headers
	}
	// A signer per request: the signer's key cache is keyed by access key
	// and scope, not by secret.
	signer := v4.NewSigner()
	ctx := r.Context()
	if presigned {
		signedURI, _, err := signer.PresignHTTP(ctx, creds, req, payload, c.service, c.region, t, opts)
		if err != nil {
			return "", err
		}
		u, err := url.Parse(signedURI)
		if err != nil {
			return "", err
		}
		rq := u.Query()
		if rq.Get("X-Amz-SignedHeaders") != strings.Join(signed, ";") {
			return "", errSignature
		}
		return rq.Get("X-Amz-Signature"), nil
	}
	if err := signer.SignHTTP(ctx, creds, req, payload, c.service, c.region, t, opts); err != nil {
		return "", err
	}
	auth := req.Header.Get("Authorization")
	_, hdrs, _ := strings.Cut(auth, "SignedHeaders=")
	hdrs, _, _ = strings.Cut(hdrs, ",")
	if hdrs != strings.Join(signed, ";") {
		return "", errSignature
	}
	_, sig, _ := strings.Cut(auth, "Signature=")
	return sig, nil
}

// wrapPayload makes the body check what the signature covered: a hex
// SHA-256 is compared at the end of the body, aws-chunked bodies are
// decoded (and their chunk signatures checked) so that the handlers
// see plain bytes.
func wrapPayload(r *http.Request, payload string, cs *chunkSigner) error {
	switch payload {
	case unsignedPayload:
		return nil
	case streamingSigned, streamingTrailer, streamingSignedT:
		// Only object uploads stream.
		if r.Method != http.MethodPut || targetOf(r.URL.Path) != object {
			return &authError{status: http.StatusBadRequest, code: "InvalidRequest", msg: "The value of x-amz-content-sha256 header is invalid."}
		}
		if payload != streamingTrailer && cs == nil {
			return malformed("a presigned request cannot stream signed chunks")
		}
		if payload == streamingTrailer {
			cs = nil
		}
		n, err := strconv.ParseInt(r.Header.Get("X-Amz-Decoded-Content-Length"), 10, 64)
		if err != nil || n < 0 {
			return &authError{status: http.StatusLengthRequired, code: "MissingContentLength", msg: "You must provide the Content-Length HTTP header."}
		}
		// The trailers (checksums) are known when the body has been read.
		trailer := payload != streamingSigned
		if trailer {
			r.Trailer = http.Header{}
		}
		r.Body = &chunkReader{br: bufio.NewReaderSize(r.Body, 64<<10), body: r.Body, sig: cs, trailer: trailer, trailers: r.Trailer,
			expect: strings.ToLower(strings.TrimSpace(r.Header.Get("X-Amz-Trailer"))), declared: n}
		r.ContentLength = n
		r.Header.Set("Content-Length", strconv.FormatInt(n, 10))
		// Decoded here: nothing downstream decodes again.
		r.Header.Set("X-Amz-Content-Sha256", unsignedPayload)
		var enc []string
		for _, e := range strings.Split(r.Header.Get("Content-Encoding"), ",") {
			if e = strings.TrimSpace(e); e != "" && e != "aws-chunked" {
				enc = append(enc, e)
			}
		}
		if len(enc) == 0 {
			r.Header.Del("Content-Encoding")
		} else {
			r.Header.Set("Content-Encoding", strings.Join(enc, ","))
		}
		return nil
	}
	if len(payload) != 64 || strings.Trim(payload, "0123456789abcdef") != "" {
		if strings.HasPrefix(payload, "STREAMING-") {
			return &authError{status: http.StatusNotImplemented, code: "NotImplemented", msg: "payload mode " + payload + " is not supported by this server"}
		}
		return &authError{status: http.StatusBadRequest, code: "InvalidArgument", msg: "x-amz-content-sha256 must be a hex SHA-256, UNSIGNED-PAYLOAD or a STREAMING- mode"}
	}
	if r.Body == nil || r.Body == http.NoBody || r.ContentLength == 0 {
		if payload != emptySHA256 {
			return &authError{status: http.StatusBadRequest, code: "XAmzContentSHA256Mismatch", msg: "The provided 'x-amz-content-sha256' header does not match what was computed.",
				fields: []string{"ClientComputedContentSHA256", payload, "S3ComputedContentSHA256", emptySHA256}}
		}
		return nil
	}
	r.Body = &sha256Body{rc: r.Body, h: sha256.New(), want: payload}
	return nil
}

// errBodyDigest fails a write whose body is not what was signed; the
// upload is discarded.
var errBodyDigest = &s3Error{http.StatusBadRequest, "XAmzContentSHA256Mismatch", "The provided 'x-amz-content-sha256' header does not match what was computed."}

type sha256Body struct {
	rc   io.ReadCloser
	h    hash.Hash
	want string
}

func (b *sha256Body) Read(p []byte) (int, error) {
	n, err := b.rc.Read(p)
	b.h.Write(p[:n])
	if err == io.EOF && hex.EncodeToString(b.h.Sum(nil)) != b.want {
		return n, errBodyDigest
	}
	return n, err
}

func (b *sha256Body) Close() error { return b.rc.Close() }

// chunkSigner checks the signature chain of an aws-chunked body: each
// chunk is signed over the previous chunk's signature (the first over the
// request's).
type chunkSigner struct {
	key     []byte
	amzDate string
	scope   string
	prev    string
}

// verifyTrailer checks the signature of the trailer lines, which is
// chained to the last chunk's.
func (s *chunkSigner) verifyTrailer(canonical, got string) bool {
	sts := "AWS4-HMAC-SHA256-TRAILER\n" + s.amzDate + "\n" + s.scope + "\n" + s.prev + "\n" + sha256Hex(canonical)
	want := hex.EncodeToString(hmacSHA256(s.key, sts))
	return hmac.Equal([]byte(want), []byte(got))
}

func (s *chunkSigner) verify(sum []byte, got string) bool {
	sts := "AWS4-HMAC-SHA256-PAYLOAD\n" + s.amzDate + "\n" + s.scope + "\n" + s.prev + "\n" + emptySHA256 + "\n" + hex.EncodeToString(sum)
	want := hex.EncodeToString(hmacSHA256(s.key, sts))
	s.prev = want
	return hmac.Equal([]byte(want), []byte(got))
}

// minChunkSize is the least size of an aws-chunked chunk but the last.
const minChunkSize = 8192

var errChunkSize = &s3Error{http.StatusBadRequest, "InvalidChunkSizeError", "Only the last chunk is allowed to have a size less than 8192 bytes"}

// isSigHex reports whether s looks like a signature: 64 lower-case hex
// digits. Anything else is a body that does not decode.
func isSigHex(s string) bool {
	return len(s) == 64 && strings.Trim(s, "0123456789abcdef") == ""
}

var errShortBody = &s3Error{http.StatusBadRequest, "IncompleteBody", "You did not provide the number of bytes specified by the Content-Length HTTP header"}

var errMalformedTrailer = &s3Error{http.StatusBadRequest, "MalformedTrailerError", "The request contained trailing data that was not well-formed or did not conform to our published schema."}

// chunkReader decodes "<hex size>[;chunk-signature=<sig>]\r\n<data>\r\n"
// chunks up to the zero-size one, then any trailer lines.
type chunkReader struct {
	br       *bufio.Reader
	body     io.Closer
	sig      *chunkSigner // nil: chunks are not signed
	trailer  bool
	expect   string      // the trailer x-amz-trailer announces, lower case
	trailers http.Header // filled from the trailer lines
	prevSize int64       // size of the previous chunk
	declared int64       // x-amz-decoded-content-length
	total    int64       // sum of the chunk sizes so far
	left     int64
	h        hash.Hash
	chunk    string // signature of the current chunk
	done     bool
	err      error
}

var errChunkSig = &s3Error{http.StatusForbidden, "SignatureDoesNotMatch", "The request signature we calculated does not match the signature you provided. Check your key and signing method."}

// errBadChunk is a body that does not decode, however it fails: S3 says
// no more than this.
var errBadChunk = &s3Error{http.StatusBadRequest, "IncompleteBody", "The request body terminated unexpectedly"}

func (r *chunkReader) Read(p []byte) (int, error) {
	if r.err != nil {
		return 0, r.err
	}
	for r.left == 0 {
		if r.done {
			return 0, io.EOF
		}
		if err := r.next(); err != nil {
			r.err = err
			return 0, err
		}
	}
	if int64(len(p)) > r.left {
		p = p[:r.left]
	}
	n, err := r.br.Read(p)
	r.left -= int64(n)
	if r.sig != nil {
		r.h.Write(p[:n])
	}
	if err == io.EOF {
		err = errBadChunk
	}
	if err == nil && r.left == 0 {
		err = r.endChunk()
	}
	if err != nil {
		r.err = err
	}
	return n, err
}

func (r *chunkReader) line() (string, error) {
	b, err := r.br.ReadSlice('\n') // a line longer than the buffer is an error too
	var se *s3Error
	if errors.As(err, &se) { // the body itself failed: too slow, cut short
		return "", err
	}
	if err != nil {
		return "", errBadChunk
	}
	s, ok := strings.CutSuffix(string(b), "\r\n")
	if !ok || strings.IndexByte(s, '\r') >= 0 {
		return "", errBadChunk
	}
	return s, nil
}

func (r *chunkReader) next() error {
	hdr, err := r.line()
	if err != nil {
		return err
	}
	sizeStr, ext, _ := strings.Cut(hdr, ";")
	size, err := strconv.ParseInt(sizeStr, 16, 64)
	if err != nil || size < 0 {
		return errBadChunk
	}
	// Every chunk but the last is at least 8 KiB, as S3 requires.
	if size > 0 && r.prevSize > 0 && r.prevSize < minChunkSize {
		return errChunkSize
	}
	r.prevSize = size
	if r.sig != nil {
		sig, ok := strings.CutPrefix(ext, "chunk-signature=")
		if !ok || !isSigHex(sig) {
			return errBadChunk
		}
		r.chunk = sig
		if r.h == nil {
			r.h = sha256.New()
		}
		r.h.Reset()
	}
	// A chunk far longer than what is left of the declared length is not
	// read at all; a small excess is reported once the chunk is read, so
	// that a broken framing is named first.
	if size > r.declared-r.total+minChunkSize {
		return errShortBody
	}
	r.total += size
	if size > 0 {
		r.left = size
		return nil
	}
	// The last, empty chunk.
	r.done = true
	if r.sig != nil && !r.sig.verify(r.h.Sum(nil), r.chunk) {
		return errChunkSig
	}
	if r.total != r.declared {
		return errShortBody
	}
	if !r.trailer {
		// A stream without trailers ends with one CRLF.
		if l, err := r.line(); err != nil || l != "" {
			return errBadChunk
		}
		return nil
	}
	// The trailer x-amz-trailer announced (only it: a missing, another
	// or an unannounced one is malformed), then, when chunks are signed,
	// its signature, then an empty line.
	l, err := r.line()
	if err != nil {
		return err
	}
	if l == "" {
		if r.expect != "" || r.sig != nil {
			return errMalformedTrailer
		}
		return nil
	}
	k, v, ok := strings.Cut(l, ":")
	k, v = strings.ToLower(strings.TrimSpace(k)), strings.TrimSpace(v)
	if !ok || k != r.expect {
		return errMalformedTrailer
	}
	if r.trailers != nil {
		r.trailers.Set(k, v)
	}
	if r.sig != nil {
		l, err := r.line()
		if err != nil {
			return err
		}
		sig, ok := strings.CutPrefix(l, "x-amz-trailer-signature:")
		if !ok || !isSigHex(sig) {
			return errBadChunk
		}
		if !r.sig.verifyTrailer(k+":"+v+"\n", sig) {
			return errChunkSig
		}
	}
	if l, err := r.line(); err != nil || l != "" {
		return errBadChunk
	}
	return nil
}

func (r *chunkReader) endChunk() error {
	var crlf [2]byte
	if _, err := io.ReadFull(r.br, crlf[:]); err != nil || crlf != [2]byte{'\r', '\n'} {
		return errBadChunk
	}
	// The chunks add up to the declared decoded length, no more (checked
	// once a chunk is read: a broken framing is reported first).
	if r.total > r.declared {
		return errShortBody
	}
	if r.sig != nil && !r.sig.verify(r.h.Sum(nil), r.chunk) {
		return errChunkSig
	}
	return nil
}

func (r *chunkReader) Close() error { return r.body.Close() }

// Signature Version 2 is what `aws s3 presign` (AWS CLI v1) and boto3
// still make for presigned URLs by default. It signs no payload, so the
// body is taken as sent, as with UNSIGNED-PAYLOAD.

// v2Subresources are the query parameters a V2 signature covers.
var v2Subresources = map[string]bool{
	"acl": true, "delete": true, "lifecycle": true, "location": true, "logging": true, "notification": true,
	"partNumber": true, "policy": true, "requestPayment": true, "tagging": true, "torrent": true,
	"uploadId": true, "uploads": true, "versionId": true, "versioning": true, "versions": true, "website": true,
	"cors": true, "restore": true, "select": true, "select-type": true,
	"response-cache-control": true, "response-content-disposition": true, "response-content-encoding": true,
	"response-content-language": true, "response-content-type": true, "response-expires": true,
}

// verifyV2 checks "<access key>:<base64 HMAC-SHA1>", from the
// Authorization header or a presigned URL (whose Expires stands for the
// date).
func (v *verifier) verifyV2(r *http.Request, cred string, presigned bool) error {
	ak, sig, ok := strings.Cut(cred, ":")
	if !ok || ak == "" || sig == "" {
		return &authError{status: http.StatusBadRequest, code: "InvalidRequest", msg: "The authorization mechanism you have provided is not supported. Please use AWS4-HMAC-SHA256."}
	}
	if !hmac.Equal([]byte(ak), []byte(v.accessKey)) {
		return &authError{status: http.StatusForbidden, code: "InvalidAccessKeyId", msg: "The AWS Access Key Id you provided does not exist in our records."}
	}
	date := r.Header.Get("Date")
	if presigned {
		date = r.URL.Query().Get("Expires")
		exp, err := strconv.ParseInt(date, 10, 64)
		if err != nil {
			return &authError{status: http.StatusForbidden, code: "AccessDenied", msg: "Expires must be a Unix time"}
		}
		if v.now().Unix() > exp {
			return &authError{status: http.StatusForbidden, code: "AccessDenied", msg: "Request has expired"}
		}
	} else {
		t, err := http.ParseTime(date)
		if xd := r.Header.Get("X-Amz-Date"); xd != "" {
			date = ""
			t, err = http.ParseTime(xd)
		}
		if err != nil {
			return &authError{status: http.StatusForbidden, code: "AccessDenied", msg: "AWS authentication requires a valid Date or x-amz-date header"}
		}
		if d := v.now().Sub(t); d > maxClockSkew || d < -maxClockSkew {
			return &authError{status: http.StatusForbidden, code: "RequestTimeTooSkewed", msg: "The difference between the request time and the server's time is too large."}
		}
	}
	want := base64.StdEncoding.EncodeToString(hmacSHA1([]byte(v.secretKey), stringToSignV2(r, date)))
	if !hmac.Equal([]byte(want), []byte(sig)) {
		return errSignature
	}
	// Nothing of the body is signed; an aws-chunked one is not decoded.
	if strings.HasPrefix(r.Header.Get("X-Amz-Content-Sha256"), "STREAMING-") {
		return malformed("Signature Version 2 cannot sign a streaming upload")
	}
	return nil
}

func hmacSHA1(key []byte, s string) []byte {
	h := hmac.New(sha1.New, key)
	h.Write([]byte(s))
	return h.Sum(nil)
}

func stringToSignV2(r *http.Request, date string) string {
	var b strings.Builder
	b.WriteString(r.Method + "\n" + r.Header.Get("Content-MD5") + "\n" + r.Header.Get("Content-Type") + "\n" + date + "\n")
	var amz []string
	for k := range r.Header {
		if lk := strings.ToLower(k); strings.HasPrefix(lk, "x-amz-") {
			amz = append(amz, lk)
		}
	}
	sort.Strings(amz)
	for _, k := range amz {
		vals := r.Header.Values(k)
		for i := range vals {
			vals[i] = strings.TrimSpace(vals[i])
		}
		b.WriteString(k + ":" + strings.Join(vals, ",") + "\n")
	}
	uri := r.RequestURI
	if i := strings.IndexByte(uri, '?'); i >= 0 {
		uri = uri[:i]
	}
	if !strings.HasPrefix(uri, "/") {
		uri = r.URL.EscapedPath()
	}
	b.WriteString(uri)
	var sub []string
	for k, vs := range r.URL.Query() {
		if !v2Subresources[k] {
			continue
		}
		if len(vs) == 0 || vs[0] == "" {
			sub = append(sub, k)
		} else {
			sub = append(sub, k+"="+vs[0])
		}
	}
	sort.Strings(sub)
	if len(sub) > 0 {
		b.WriteString("?" + strings.Join(sub, "&"))
	}
	return b.String()
}
