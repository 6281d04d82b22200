package store

import (
	"bytes"
	"cmp"
	"context"
	"crypto/md5"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/aws/ratelimit"
	"github.com/aws/aws-sdk-go-v2/aws/retry"
	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/feature/ec2/imds"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/s3/types"
	"github.com/aws/smithy-go"
	smithyhttp "github.com/aws/smithy-go/transport/http"
)

// Multipart defaults of the S3 driver.
const (
	// DefaultPartSize is the S3 part size when WriteOptions.PartSize is zero.
	DefaultPartSize = 8 << 20
	// DefaultPartConcurrency is how many parts of one object upload at
	// once when WriteOptions.Concurrency is zero, to begin with.
	DefaultPartConcurrency = 4
	// MaxPartConcurrency is the most parts of one object in flight that
	// adapting grows to (fewer when WriteOptions.Memory holds fewer).
	MaxPartConcurrency = 16

	minPartSize = 5 << 20 // S3 rejects smaller parts, except the last
	maxPartSize = 5 << 30
	maxParts    = 10000 // parts of one multipart upload
	// s3MaxAttempts keeps the SDK's own retries modest: the fetch layer
	// retries with its own budget and backoff, and stacked retries multiply.
	s3MaxAttempts = 3
)

// s3Driver is the s3:// driver: any S3-compatible endpoint through
// aws-sdk-go-v2, on the tuned Transport.
type s3Driver struct {
	// cur is the client of the bucket's region: replaced (under regionMu)
	// when the server names another one.
	cur      atomic.Pointer[s3.Client]
	regionMu sync.Mutex
	bucket   string
	endpoint string // named in "unreachable" messages
	tr       *Transport
	// partAttempts gives multipart part uploads the SDK's retries even
	// when Options.Attempts turned them off: no caller can retry one part,
	// and retrying the whole object instead costs all of its bytes again.
	partAttempts func(*s3.Options)
	// bufs recycles part buffers across writers: fresh memory is slow
	// to fault in, and a writer of many objects would otherwise fault in
	// a part's worth for each.
	bufs sync.Pool
}

// getBuf returns an empty pooled buffer of at least size bytes, or nil.
func (d *s3Driver) c() *s3.Client { return d.cur.Load() }

func (d *s3Driver) getBuf(size int64) []byte {
	if p, ok := d.bufs.Get().(*[]byte); ok && int64(cap(*p)) >= size {
		return (*p)[:0]
	}
	return nil
}

func (d *s3Driver) putBuf(b []byte) {
	if cap(b) >= minPartSize {
		d.bufs.Put(&b)
	}
}

// openS3 opens bucket with the standard AWS credential chain (environment,
// shared config and credentials files, AWS_PROFILE, web identity, IMDS),
// or with opts.AccessKeyID / SecretAccessKey when both are set.
//
// The endpoint is opts.Endpoint, else AWS_ENDPOINT_URL_S3 / AWS_ENDPOINT_URL
// or endpoint_url in the shared config, else AWS. Any custom endpoint is
// addressed path-style (http://host/bucket/key), which every S3-compatible
// server accepts. The region is opts.Region, else AWS_REGION or the shared
// config, else us-east-1; a bucket that lives in another region is found
// from the server's answer (as the aws CLI does) and used from then on.
// A private CA is trusted through AWS_CA_BUNDLE or the shared config's
// ca_bundle. Opening sends no request.
func openS3(ctx context.Context, bucket string, opts Options) (Driver, error) {
	if opts.Endpoint != "" {
		if err := checkEndpoint(opts.Endpoint); err != nil {
			return nil, err
		}
	}
	var lo []func(*config.LoadOptions) error
	if opts.Region != "" {
		lo = append(lo, config.WithRegion(opts.Region))
	}
	if opts.AccessKeyID != "" && opts.SecretAccessKey != "" {
		lo = append(lo, config.WithCredentialsProvider(
			credentials.NewStaticCredentialsProvider(opts.AccessKeyID, opts.SecretAccessKey, "")))
	}
	if loopbackEndpoint(opts.Endpoint, os.Getenv("AWS_ENDPOINT_URL_S3"), os.Getenv("AWS_ENDPOINT_URL")) {
		// Instance-role credentials are for AWS, never for a local
		// server; asking the metadata service would only leave the machine.
		lo = append(lo, config.WithEC2IMDSClientEnableState(imds.ClientDisabled))
	}
	cfg, err := config.LoadDefaultConfig(ctx, lo...)
	if err != nil {
		return nil, fmt.Errorf("load AWS configuration: %s", oneLine(err))
	}
	if cfg.Region == "" {
		cfg.Region = "us-east-1"
	}
	tr := NewTransport(opts)
	if err := useCABundle(tr, cfg); err != nil {
		return nil, err
	}
	client := s3.NewFromConfig(cfg, func(o *s3.Options) {
		if opts.Endpoint != "" {
			o.BaseEndpoint = aws.String(opts.Endpoint)
		}
		// Virtual-host addressing needs DNS for bucket.host, which
		// custom endpoints (MinIO, 127.0.0.1) rarely have.
		o.UsePathStyle = o.BaseEndpoint != nil
		o.HTTPClient = &http.Client{
			Transport: tr,
			// A redirect is S3 naming the bucket's region (handled by
			// call); following a Location would resend signed requests to
			// another host.
			CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
		}
		o.Retryer = newS3Retryer(opts.Attempts)
		o.APIOptions = append(o.APIOptions, addRegionHint)
		// Ranged GETs never carry a whole-object checksum; the SDK would
		// log a warning for each one.
		o.DisableLogOutputChecksumValidationSkipped = true
	})
	endpoint := "https://s3." + cfg.Region + ".amazonaws.com"
	if ep := client.Options().BaseEndpoint; ep != nil {
		if err := checkEndpoint(*ep); err != nil {
			return nil, err
		}
		endpoint = *ep
	}
	d := &s3Driver{bucket: bucket, endpoint: endpoint, tr: tr,
		partAttempts: func(o *s3.Options) { o.Retryer = newS3Retryer(max(opts.Attempts, s3MaxAttempts)) }}
	d.cur.Store(client)
	return d, nil
}

// loopbackEndpoint reports whether the first non-empty endpoint is on this machine.
func loopbackEndpoint(eps ...string) bool {
	for _, ep := range eps {
		if ep == "" {
			continue
		}
		u, err := url.Parse(ep)
		if err != nil {
			return false
		}
		host := u.Hostname()
		ip := net.ParseIP(host)
		return host == "localhost" || (ip != nil && ip.IsLoopback())
	}
	return false
}

func checkEndpoint(ep string) error {
	u, err := url.Parse(ep)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return fmt.Errorf("endpoint %q is not a URL like http://host:port", ep)
	}
	return nil
}

func newS3Retryer(attempts int) aws.Retryer {
	if attempts <= 0 {
		attempts = s3MaxAttempts
	}
	return retry.NewStandard(func(o *retry.StandardOptions) {
		o.MaxAttempts = attempts
		o.MaxBackoff = 2 * time.Second
		// The token bucket would turn a burst of throttling across many
		// parallel requests into "retry quota exceeded" failures; the
		// layer above owns the retry budget.
		o.RateLimiter = ratelimit.None
		// An endpoint that refuses connections or does not resolve will
		// not start to on the next attempt: fail fast and say so.
		unreachable := retry.IsErrorRetryableFunc(func(err error) aws.Ternary {
			if unreachableReason(err) != "" {
				return aws.FalseTernary
			}
			return aws.UnknownTernary
		})
		o.Retryables = append([]retry.IsErrorRetryable{unreachable}, o.Retryables...)
	})
}

func (d *s3Driver) List(ctx context.Context, prefix string, fn func(ObjectInfo) error) error {
	var token *string
	for {
		page, err := call(ctx, d, func(c *s3.Client) (*s3.ListObjectsV2Output, error) {
			in := &s3.ListObjectsV2Input{Bucket: &d.bucket, ContinuationToken: token}
			if prefix != "" {
				in.Prefix = &prefix
			}
			return c.ListObjectsV2(ctx, in)
		})
		if err != nil {
			return d.convert(err)
		}
		for _, o := range page.Contents {
			info := ObjectInfo{
				Key:     aws.ToString(o.Key),
				Size:    aws.ToInt64(o.Size),
				ETag:    aws.ToString(o.ETag),
				ModTime: aws.ToTime(o.LastModified),
			}
			if err := fn(info); err != nil {
				return err
			}
		}
		token = page.NextContinuationToken
		if !aws.ToBool(page.IsTruncated) || aws.ToString(token) == "" {
			return nil
		}
	}
}

func (d *s3Driver) Stat(ctx context.Context, key string) (ObjectInfo, error) {
	out, err := call(ctx, d, func(c *s3.Client) (*s3.HeadObjectOutput, error) {
		return c.HeadObject(ctx, &s3.HeadObjectInput{Bucket: &d.bucket, Key: &key})
	})
	if err != nil {
		return ObjectInfo{}, d.headErr(ctx, err)
	}
	return ObjectInfo{
		Key:     key,
		Size:    aws.ToInt64(out.ContentLength),
		ETag:    aws.ToString(out.ETag),
		ModTime: aws.ToTime(out.LastModified),
	}, nil
}

// headErr converts a HEAD error. A HEAD response has no body, so a 404
// cannot say whether the key or the bucket is missing; ask, so that the
// message names the real problem.
func (d *s3Driver) headErr(ctx context.Context, err error) error {
	err = d.convert(err)
	if KindOf(err) == KindNotFound {
		_, berr := d.c().HeadBucket(ctx, &s3.HeadBucketInput{Bucket: &d.bucket})
		if berr != nil && KindOf(d.convert(berr)) == KindNotFound {
			return d.noSuchBucket(berr)
		}
	}
	return err
}

// rangeHeader renders r as an HTTP Range header; "" reads the whole object.
func rangeHeader(r Range) string {
	switch {
	case r.Off < 0:
		return "bytes=" + strconv.FormatInt(r.Off, 10) // "bytes=-n"
	case r.Len < 0 && r.Off == 0:
		return ""
	case r.Len < 0:
		return fmt.Sprintf("bytes=%d-", r.Off)
	}
	return fmt.Sprintf("bytes=%d-%d", r.Off, r.Off+r.Len-1)
}

// parseContentRange reads the object size from "bytes a-b/size".
func parseContentRange(s string) (size int64, ok bool) {
	_, total, found := strings.Cut(s, "/")
	if !found || !strings.HasPrefix(s, "bytes ") || total == "*" {
		return 0, false
	}
	n, err := strconv.ParseInt(total, 10, 64)
	return n, err == nil && n >= 0
}

func (d *s3Driver) ReadRange(ctx context.Context, key string, r Range, opts ReadOptions) (io.ReadCloser, ObjectInfo, error) {
	in := &s3.GetObjectInput{Bucket: &d.bucket, Key: &key}
	hdr := rangeHeader(r)
	if hdr != "" {
		in.Range = &hdr
	}
	if opts.IfMatch != "" {
		in.IfMatch = &opts.IfMatch
	}
	out, err := call(ctx, d, func(c *s3.Client) (*s3.GetObjectOutput, error) { return c.GetObject(ctx, in) })
	if err != nil {
		if statusOf(err) == http.StatusRequestedRangeNotSatisfiable {
			return d.emptyRead(ctx, key, opts)
		}
		return nil, ObjectInfo{}, d.convert(err)
	}
	info := ObjectInfo{
		Key:     key,
		ETag:    aws.ToString(out.ETag),
		ModTime: aws.ToTime(out.LastModified),
	}
	body := io.ReadCloser(&s3Body{rc: out.Body, d: d})
	if size, ok := parseContentRange(aws.ToString(out.ContentRange)); ok {
		info.Size = size
		return body, info, nil
	}
	// A 200: the whole object. If a range was asked for, the server
	// ignored it (some do when it covers everything); cut it out here.
	info.Size = aws.ToInt64(out.ContentLength)
	if hdr != "" {
		start, end := resolveRange(r, info.Size)
		if start > 0 {
			if _, err := io.CopyN(io.Discard, body, start); err != nil {
				body.Close()
				return nil, info, err
			}
		}
		body = &limitedBody{Reader: io.LimitReader(body, end-start), c: body}
	}
	return body, info, nil
}

// emptyRead answers a range that starts at or past the end: S3 says 416,
// the Driver contract says empty body plus the object's info.
func (d *s3Driver) emptyRead(ctx context.Context, key string, opts ReadOptions) (io.ReadCloser, ObjectInfo, error) {
	info, err := d.Stat(ctx, key)
	if err != nil {
		return nil, ObjectInfo{}, err
	}
	if opts.IfMatch != "" && opts.IfMatch != info.ETag {
		return nil, info, &s3Error{kind: KindPrecondition, msg: preconditionMsg, err: ErrPrecondition}
	}
	return http.NoBody, info, nil
}

type limitedBody struct {
	io.Reader
	c io.Closer
}

func (b *limitedBody) Close() error { return b.c.Close() }

// s3Body gives body read errors (resets, stalls) their Kind and a one-line
// message.
type s3Body struct {
	rc io.ReadCloser
	d  *s3Driver
}

func (b *s3Body) Read(p []byte) (int, error) {
	n, err := b.rc.Read(p)
	if err != nil && err != io.EOF {
		err = b.d.convert(err)
	}
	return n, err
}

func (b *s3Body) Close() error { return b.rc.Close() }

func (d *s3Driver) Delete(ctx context.Context, key string) error {
	// S3 answers 204 for a missing key; the Driver contract wants
	// ErrNotFound, and only a HEAD can tell.
	if _, err := d.Stat(ctx, key); err != nil {
		return err
	}
	_, err := call(ctx, d, func(c *s3.Client) (*s3.DeleteObjectOutput, error) {
		return c.DeleteObject(ctx, &s3.DeleteObjectInput{Bucket: &d.bucket, Key: &key})
	})
	return d.convert(err)
}

// MakeBucket creates the bucket, in the driver's region.
func (d *s3Driver) MakeBucket(ctx context.Context) error {
	c := d.c()
	in := &s3.CreateBucketInput{Bucket: &d.bucket}
	// us-east-1 is S3's default and refuses to be named as a constraint.
	if r := c.Options().Region; r != "" && r != "us-east-1" {
		in.CreateBucketConfiguration = &types.CreateBucketConfiguration{LocationConstraint: types.BucketLocationConstraint(r)}
	}
	_, err := c.CreateBucket(ctx, in)
	return d.convert(err)
}

func (d *s3Driver) Classify(err error) Kind {
	var se *s3Error
	if errors.As(d.convert(err), &se) {
		return se.kind
	}
	return KindUnknown
}

func (d *s3Driver) Close() error {
	d.tr.CloseIdleConnections()
	return nil
}

// NewWriter streams an object to S3. Bytes are buffered up to one part: an
// object that ends before the first part fills is one PutObject; a larger
// one becomes a multipart upload with parts in flight together: as many as
// WriteOptions.Concurrency, or, when it is zero, from DefaultPartConcurrency
// up as adapting finds more parts in flight upload faster, so memory stays
// within (parts in flight + 1) x PartSize, and within WriteOptions.Memory.
// The upload is completed by Close; Abort, any failure, or cancelling ctx
// aborts it, so nothing is visible and no parts are left billed. Part
// buffers are reused across the driver's writers.
func (d *s3Driver) NewWriter(ctx context.Context, key string, opts WriteOptions) (DriverWriter, error) {
	partSize := choosePartSize(opts.PartSize, opts.Size)
	most := MaxPartConcurrency
	if opts.Memory > 0 {
		most = int(min(MaxPartConcurrency, max(1, opts.Memory/partSize-1)))
	}
	limit, adaptive := opts.Concurrency, false
	if limit <= 0 {
		limit, adaptive = min(DefaultPartConcurrency, most), true
	}
	pctx, cancel := context.WithCancel(ctx)
	w := &s3Writer{
		d:        d,
		parent:   ctx,
		ctx:      pctx,
		cancel:   cancel,
		key:      key,
		partSize: int64(partSize),
		stored:   opts.Stored,
		retry:    opts.Retry,
		send:     opts.Send,
		limit:    limit,
		most:     most,
		adaptive: adaptive,
	}
	w.slot = sync.NewCond(&w.partMu)
	// A waiter for a slot wakes when the upload is cancelled too.
	context.AfterFunc(pctx, func() {
		w.partMu.Lock()
		w.slot.Broadcast()
		w.partMu.Unlock()
	})
	// A cancelled ctx must leave nothing behind even if the caller never
	// reaches Abort.
	w.stopWatch = context.AfterFunc(ctx, func() { _ = w.abort(w.d.convert(ctx.Err())) })
	return w, nil
}

// choosePartSize is the part size of an object of the expected size
// (zero: unknown): the one asked for, or the default, raised so that the
// object fits in S3's 10,000 parts and kept within S3's part limits.
// An object of unknown size grows its parts as it goes (see flushPart).
func choosePartSize(asked, size int64) int64 {
	ps := asked
	if ps <= 0 {
		ps = DefaultPartSize
	}
	if size > 0 {
		// Whole MiB, so part boundaries stay aligned with the pooled buffers.
		need := (size + maxParts - 1) / maxParts
		need = (need + 1<<20 - 1) &^ (1<<20 - 1)
		ps = max(ps, need)
	}
	return min(max(ps, minPartSize), maxPartSize)
}

const (
	writerOpen = iota
	writerClosed
	writerAborted
)

type s3Writer struct {
	d         *s3Driver
	parent    context.Context
	ctx       context.Context // cancelled on abort or on a failed part
	cancel    context.CancelFunc
	stopWatch func() bool
	key       string
	partSize  int64
	stored    func(int64) // WriteOptions.Stored, or nil
	retry     func(context.Context, func() error) error
	send      func(context.Context, int64) (func() error, error) // WriteOptions.Send, or nil

	mu       sync.Mutex // serialises Write, Close, Abort and the ctx watch
	state    int
	abortErr error // why the writer was aborted, if not by Abort
	buf      []byte
	uploadID string
	nextPart int32
	wg       sync.WaitGroup

	partMu   sync.Mutex
	parts    []types.CompletedPart
	partErr  error
	slot     *sync.Cond // a part finished, or the upload was cancelled
	inFlight int        // parts uploading
	limit    int        // parts allowed in flight
	most     int        // the most limit may grow to
	adaptive bool
	level    adaptLevel
}

// adaptLevel is what adapting measured at the current limit: parts
// complete at a rate; when the writer waited for a slot (the parts, not
// the writer, set the pace), one more part in flight is tried, and kept
// growing from as long as each step raised the rate by a tenth.
type adaptLevel struct {
	start    time.Time
	bytes    int64
	parts    int
	waited   bool
	prevRate float64 // bytes a second at the limit before; 0: none
	stopped  bool    // a step did not pay: stay
}

// partDone records a finished part for adapting; under partMu.
func (w *s3Writer) partDone(n int64) {
	l := &w.level
	if !w.adaptive || l.stopped {
		return
	}
	l.bytes += n
	l.parts++
	if !l.waited || l.parts < w.limit || w.limit >= w.most {
		return
	}
	rate := float64(l.bytes) / time.Since(l.start).Seconds()
	if l.prevRate > 0 && rate < 1.1*l.prevRate {
		l.stopped = true
		return
	}
	w.limit++
	*l = adaptLevel{start: time.Now(), prevRate: rate}
	w.slot.Broadcast()
}

// SendsRequests: every request that carries the object's bytes goes
// through WriteOptions.Send.
func (w *s3Writer) SendsRequests() bool { return true }

// sent runs one request under WriteOptions.Send.
func (w *s3Writer) sent(n int64, req func() error) error {
	if w.send == nil {
		return req()
	}
	done, err := w.send(w.ctx, n)
	if err != nil {
		return err
	}
	err = req()
	if derr := done(); err == nil {
		err = derr
	}
	return err
}

// request sends one request other than a part's (the single PUT, the
// create and the complete of a multipart upload) under WriteOptions.Retry
// when it is set, else once.
func (w *s3Writer) request(n int64, req func() error) error {
	if w.retry == nil {
		return w.sent(n, req)
	}
	return w.retry(w.ctx, func() error { return w.d.convert(w.sent(n, req)) })
}

var errWriterDone = &s3Error{kind: KindInvalid, msg: "write after Close or Abort", err: ErrInvalid}

func (w *s3Writer) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.state != writerOpen {
		return 0, w.doneErr()
	}
	if err := w.failure(); err != nil {
		return 0, err
	}
	n := 0
	for len(p) > 0 {
		if w.buf == nil {
			w.buf = w.d.getBuf(w.partSize)
		}
		k := min(int64(len(p)), w.partSize-int64(len(w.buf)))
		// Without a pooled buffer, append grows one with the object, so a
		// small object does not cost a whole part of fresh memory.
		w.buf = append(w.buf, p[:k]...)
		p = p[k:]
		n += int(k)
		if int64(len(w.buf)) == w.partSize {
			if err := w.flushPart(); err != nil {
				return n, err
			}
		}
	}
	return n, nil
}

func (w *s3Writer) doneErr() error {
	if w.abortErr != nil {
		return w.abortErr
	}
	return errWriterDone
}

// failure is the first error of a part upload, or of ctx.
func (w *s3Writer) failure() error {
	w.partMu.Lock()
	err := w.partErr
	w.partMu.Unlock()
	if err != nil {
		return err
	}
	if err := w.parent.Err(); err != nil {
		return w.d.convert(err)
	}
	return w.d.convert(w.ctx.Err())
}

// flushPart starts uploading the buffered part, once a slot is free.
func (w *s3Writer) flushPart() error {
	if w.uploadID == "" {
		var out *s3.CreateMultipartUploadOutput
		err := w.request(0, func() error {
			var err error
			out, err = call(w.ctx, w.d, func(c *s3.Client) (*s3.CreateMultipartUploadOutput, error) {
				return c.CreateMultipartUpload(w.ctx, &s3.CreateMultipartUploadInput{Bucket: &w.d.bucket, Key: &w.key})
			})
			return err
		})
		if err != nil {
			return w.d.convert(err)
		}
		w.uploadID = aws.ToString(out.UploadId)
	}
	w.partMu.Lock()
	if w.inFlight >= w.limit {
		w.level.waited = true
	}
	for w.inFlight >= w.limit && w.partErr == nil && w.ctx.Err() == nil {
		w.slot.Wait()
	}
	w.partMu.Unlock()
	if err := w.failure(); err != nil {
		return err
	}
	w.partMu.Lock()
	if w.inFlight == 0 && w.level.start.IsZero() {
		w.level.start = time.Now()
	}
	w.inFlight++
	w.partMu.Unlock()
	w.nextPart++
	num, data := w.nextPart, w.buf
	w.buf = nil
	if num%1000 == 0 && w.partSize < maxPartSize {
		// S3 allows 10,000 parts: grow parts so that an object of unknown
		// length never runs out of them.
		w.partSize = min(2*w.partSize, maxPartSize)
	}
	w.wg.Add(1)
	go func() {
		defer w.wg.Done()
		var out *s3.UploadPartOutput
		try := func(optFns ...func(*s3.Options)) error {
			return w.d.convert(w.sent(int64(len(data)), func() error {
				var err error
				out, err = call(w.ctx, w.d, func(c *s3.Client) (*s3.UploadPartOutput, error) {
					return c.UploadPart(w.ctx, &s3.UploadPartInput{
						Bucket:        &w.d.bucket,
						Key:           &w.key,
						UploadId:      &w.uploadID,
						PartNumber:    &num,
						Body:          bytes.NewReader(data),
						ContentLength: aws.Int64(int64(len(data))),
					}, optFns...)
				})
				return err
			}))
		}
		var err error
		if w.retry != nil {
			err = w.retry(w.ctx, func() error { return try() })
		} else {
			err = try(w.d.partAttempts)
		}
		w.partMu.Lock()
		if err != nil {
			if w.partErr == nil {
				w.partErr = err
			}
			w.cancel() // stop the other parts: this upload is lost
		} else {
			w.parts = append(w.parts, types.CompletedPart{ETag: out.ETag, PartNumber: &num})
			w.partDone(int64(len(data)))
		}
		w.partMu.Unlock()
		if err == nil && w.stored != nil {
			w.stored(int64(len(data)))
		}
		w.d.putBuf(data)
		w.partMu.Lock()
		w.inFlight--
		w.slot.Broadcast()
		w.partMu.Unlock()
	}()
	return nil
}

func (w *s3Writer) Close() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	switch w.state {
	case writerClosed:
		return nil
	case writerAborted:
		return w.doneErr()
	}
	w.state = writerClosed
	w.stopWatch()
	defer w.cancel()

	if w.uploadID == "" {
		if err := w.failure(); err != nil {
			return err
		}
		err := w.request(int64(len(w.buf)), func() error {
			_, err := call(w.ctx, w.d, func(c *s3.Client) (*s3.PutObjectOutput, error) {
				return c.PutObject(w.ctx, &s3.PutObjectInput{
					Bucket:        &w.d.bucket,
					Key:           &w.key,
					Body:          bytes.NewReader(w.buf),
					ContentLength: aws.Int64(int64(len(w.buf))),
				})
			})
			return err
		})
		if err == nil && w.stored != nil {
			w.stored(int64(len(w.buf)))
		}
		w.d.putBuf(w.buf)
		w.buf = nil
		return w.d.convert(err)
	}
	if len(w.buf) > 0 {
		if err := w.flushPart(); err != nil {
			return w.abortUpload(err)
		}
	}
	w.wg.Wait()
	if err := w.failure(); err != nil {
		return w.abortUpload(err)
	}
	sort.Slice(w.parts, func(i, j int) bool { return *w.parts[i].PartNumber < *w.parts[j].PartNumber })
	tries := 0
	err := w.request(0, func() error {
		tries++
		_, err := w.d.c().CompleteMultipartUpload(w.ctx, &s3.CompleteMultipartUploadInput{
			Bucket:          &w.d.bucket,
			Key:             &w.key,
			UploadId:        &w.uploadID,
			MultipartUpload: &types.CompletedMultipartUpload{Parts: w.parts},
		})
		return err
	})
	if err != nil && tries > 1 && errors.Is(w.d.convert(err), ErrNotFound) && w.completed() {
		// A retried complete whose first try took effect, its answer lost:
		// the upload is gone because the object is there.
		return nil
	}
	if err != nil {
		return w.abortUpload(w.d.convert(err))
	}
	return nil
}

// completed says the object at the writer's key is this upload's: its
// ETag is S3's of a multipart upload of these parts (the MD5 of their
// MD5s, then the part count).
func (w *s3Writer) completed() bool {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(w.parent), 30*time.Second)
	defer cancel()
	out, err := w.d.c().HeadObject(ctx, &s3.HeadObjectInput{Bucket: &w.d.bucket, Key: &w.key})
	if err != nil {
		return false
	}
	sum := md5.New()
	for _, p := range w.parts {
		b, err := hex.DecodeString(strings.Trim(aws.ToString(p.ETag), `"`))
		if err != nil {
			return false
		}
		sum.Write(b)
	}
	want := fmt.Sprintf("%x-%d", sum.Sum(nil), len(w.parts))
	return strings.Trim(aws.ToString(out.ETag), `"`) == want
}

func (w *s3Writer) Abort() error { return w.abort(nil) }

func (w *s3Writer) abort(cause error) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.state != writerOpen {
		return nil
	}
	w.state = writerAborted
	w.abortErr = cause
	w.stopWatch()
	w.d.putBuf(w.buf)
	w.buf = nil
	if w.uploadID == "" {
		w.cancel()
		return nil
	}
	return w.abortUpload(nil)
}

// abortUpload stops the parts in flight and aborts the multipart upload.
// It runs on a context of its own: the caller's may be the reason for the
// abort, and an abort that is never sent leaves parts stored (and billed).
func (w *s3Writer) abortUpload(cause error) error {
	w.partMu.Lock()
	inFlight := w.inFlight > 0
	w.partMu.Unlock()
	w.cancel()
	w.wg.Wait()
	ctx, cancel := context.WithTimeout(context.WithoutCancel(w.parent), 30*time.Second)
	defer cancel()
	for attempt := 1; ; attempt++ {
		_, err := w.d.c().AbortMultipartUpload(ctx, &s3.AbortMultipartUploadInput{
			Bucket:   &w.d.bucket,
			Key:      &w.key,
			UploadId: &w.uploadID,
		})
		if err != nil && statusOf(err) != http.StatusNotFound {
			err = fmt.Errorf("abort multipart upload %s: %w", w.uploadID, w.d.convert(err))
			if cause != nil {
				return fmt.Errorf("%w (and %v)", cause, err)
			}
			return err
		}
		if !inFlight || attempt == 4 {
			return cause
		}
		// A part the server was still storing when the abort arrived can
		// land after it and bring the upload back (S3 documents this;
		// MinIO does it): look again, and abort again if it is there.
		select {
		case <-time.After(time.Duration(attempt) * 100 * time.Millisecond):
		case <-ctx.Done():
			return cause
		}
		_, err = w.d.c().ListParts(ctx, &s3.ListPartsInput{Bucket: &w.d.bucket, Key: &w.key, UploadId: &w.uploadID})
		if err != nil {
			return cause // gone (NoSuchUpload), or we cannot tell
		}
	}
}

// s3Error is an S3 failure with its Kind decided once and a one-line
// message that says what to do, not an SDK dump.
type s3Error struct {
	kind Kind
	msg  string
	err  error
}

func (e *s3Error) Error() string { return e.msg }
func (e *s3Error) Unwrap() error { return e.err }

// Is lets KindOf and errors.Is(err, ErrNotFound) see the Kind.
func (e *s3Error) Is(target error) bool { return (&Error{Kind: e.kind}).Is(target) }

const (
	preconditionMsg = "object changed since it was opened (ETag no longer matches)"
	credentialsHint = "check AWS_ACCESS_KEY_ID / AWS_SECRET_ACCESS_KEY (or AWS_PROFILE)"
)

func statusOf(err error) int {
	var re *smithyhttp.ResponseError
	if errors.As(err, &re) && re.Response != nil {
		return re.HTTPStatusCode()
	}
	return 0
}

func (d *s3Driver) noSuchBucket(err error) error {
	return &s3Error{kind: KindNotFound, msg: fmt.Sprintf("bucket %q does not exist", d.bucket), err: err}
}

// convert classifies an SDK or network error and gives it a one-line
// message. It is idempotent.
func (d *s3Driver) convert(err error) error {
	if err == nil {
		return nil
	}
	var se *s3Error
	if errors.As(err, &se) {
		return err
	}
	mk := func(k Kind, format string, a ...any) error {
		return &s3Error{kind: k, msg: fmt.Sprintf(format, a...), err: err}
	}
	var stall *StallError
	if errors.As(err, &stall) {
		return mk(KindRetryable, "%s", stall.Error())
	}
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		// Keep the context error itself in the chain: KindOf and
		// errors.Is(err, context.Canceled) work on it.
		return &s3Error{kind: KindCanceled, msg: oneLine(ctxErr(err)), err: err}
	}
	status := statusOf(err)
	var ae smithy.APIError
	if errors.As(err, &ae) {
		code := ae.ErrorCode()
		switch code {
		case "NoSuchBucket":
			return d.noSuchBucket(err)
		case "BucketAlreadyOwnedByYou":
			return mk(KindPermanent, "bucket %q already exists", d.bucket)
		case "BucketAlreadyExists":
			return mk(KindPermanent, "bucket %q already exists (the name is taken)", d.bucket)
		case "InvalidBucketName":
			return mk(KindInvalid, "bucket name %q is not valid (3-63 characters: a-z, 0-9, '.', '-')", d.bucket)
		case "NoSuchKey", "NotFound":
			return mk(KindNotFound, "no such object")
		case "NoSuchUpload":
			return mk(KindNotFound, "no such multipart upload (aborted or completed)")
		case "InvalidAccessKeyId":
			return mk(KindPermission, "access key id not recognised: %s", credentialsHint)
		case "SignatureDoesNotMatch":
			return mk(KindPermission, "request signature does not match: check AWS_SECRET_ACCESS_KEY (or AWS_PROFILE)")
		case "ExpiredToken", "TokenRefreshRequired", "InvalidToken":
			return mk(KindPermission, "credentials expired or invalid: refresh AWS_SESSION_TOKEN / AWS_PROFILE")
		case "AccessDenied", "AllAccessDisabled", "AccountProblem", "Forbidden":
			return mk(KindPermission, "access denied: %s", credentialsHint)
		case "PermanentRedirect", "AuthorizationHeaderMalformed", "IllegalLocationConstraintException":
			if r, ok := wrongRegion(err); ok && r != "" {
				return mk(KindPermanent, "bucket %q is in region %s: set --region or AWS_REGION", d.bucket, r)
			}
			return mk(KindPermanent, "bucket %q is in another region than %s (%s): set --region or AWS_REGION", d.bucket, d.region(), code)
		case "PreconditionFailed":
			return mk(KindPrecondition, preconditionMsg)
		case "SlowDown", "Throttling", "ThrottlingException", "RequestLimitExceeded",
			"TooManyRequests", "RequestThrottled":
			return mk(KindRetryable, "throttled by the server (%d %s): retry later", status, code)
		case "InternalError", "ServiceUnavailable", "RequestTimeout", "OperationAborted":
			return mk(KindRetryable, "server error (%d %s): retry later", status, code)
		}
		switch {
		case status == http.StatusNotFound:
			return mk(KindNotFound, "no such object")
		case status == http.StatusForbidden || status == http.StatusUnauthorized:
			return mk(KindPermission, "access denied (%d %s): %s", status, code, credentialsHint)
		case status == http.StatusPreconditionFailed:
			return mk(KindPrecondition, preconditionMsg)
		case status == http.StatusTooManyRequests || status >= 500:
			return mk(KindRetryable, "server error (%d %s): retry later", status, code)
		}
		msg := ae.ErrorMessage()
		if msg == "" {
			return mk(KindPermanent, "%s (HTTP %d)", code, status)
		}
		return mk(KindPermanent, "%s (HTTP %d): %s", code, status, oneLine(errors.New(msg)))
	}
	var de *smithy.DeserializationError
	if errors.As(err, &de) {
		return mk(KindPermanent, "endpoint %s does not answer as an S3 server (%s)", d.endpoint, oneLine(innermost(err)))
	}
	if untrustedCert(err) {
		return mk(KindPermanent, "TLS certificate of %s not trusted (%s): set AWS_CA_BUNDLE (or ca_bundle in the AWS config) to the PEM file of its CA",
			d.endpoint, oneLine(innermost(err)))
	}
	if reason := unreachableReason(err); reason != "" {
		return mk(KindPermanent, "endpoint %s unreachable (%s)", d.endpoint, reason)
	}
	if isCredentialsErr(err) {
		return mk(KindPermission, "no usable AWS credentials: set AWS_ACCESS_KEY_ID / AWS_SECRET_ACCESS_KEY or AWS_PROFILE")
	}
	switch {
	case errors.Is(err, syscall.ECONNRESET), errors.Is(err, syscall.EPIPE),
		strings.Contains(err.Error(), "connection reset"):
		return mk(KindRetryable, "connection reset by %s", d.endpoint)
	case errors.Is(err, io.ErrUnexpectedEOF):
		return mk(KindRetryable, "connection to %s closed mid-response", d.endpoint)
	}
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() {
		return mk(KindRetryable, "request to %s timed out", d.endpoint)
	}
	if status >= 500 || status == http.StatusTooManyRequests {
		return mk(KindRetryable, "server error (HTTP %d): retry later", status)
	}
	return mk(KindPermanent, "%s", oneLine(innermost(err)))
}

// ctxErr finds the context error in a chain, for a short message.
func ctxErr(err error) error {
	if errors.Is(err, context.DeadlineExceeded) {
		return context.DeadlineExceeded
	}
	return context.Canceled
}

// innermost is the deepest error that still has a message of its own: the
// SDK's outer layers only add "operation error S3: GetObject, ..." noise.
func innermost(err error) error {
	for {
		next := errors.Unwrap(err)
		if next == nil || next.Error() == "" {
			return err
		}
		err = next
	}
}

// unreachableReason says why no connection could be made, or "".
func unreachableReason(err error) string {
	var dns *net.DNSError
	switch {
	case errors.Is(err, syscall.ECONNREFUSED):
		return "connection refused"
	case errors.As(err, &dns) && dns.IsNotFound:
		return "no such host"
	case errors.Is(err, syscall.ENETUNREACH), errors.Is(err, syscall.EHOSTUNREACH):
		return "no route to host"
	}
	return ""
}

func isCredentialsErr(err error) bool {
	s := err.Error()
	return strings.Contains(s, "failed to retrieve credentials") ||
		strings.Contains(s, "failed to refresh cached credentials") ||
		strings.Contains(s, "no EC2 IMDS role found") ||
		strings.Contains(s, "static credentials are empty")
}

// ListUploads lists the bucket's uploads and keeps those under prefix:
// MinIO answers a prefix only when it is a whole key (it lists by object,
// not by prefix), so a prefix sent to the server would miss uploads there.
// MinIO's bucket-wide list is only of uploads started since it last
// restarted; an older orphan there needs its exact key as the prefix.
func (d *s3Driver) ListUploads(ctx context.Context, prefix string, fn func(Upload) error) error {
	var ups []Upload
	var keyMarker, idMarker *string
	for {
		page, err := call(ctx, d, func(c *s3.Client) (*s3.ListMultipartUploadsOutput, error) {
			return c.ListMultipartUploads(ctx, &s3.ListMultipartUploadsInput{Bucket: &d.bucket, KeyMarker: keyMarker, UploadIdMarker: idMarker})
		})
		if err != nil {
			return d.convert(err)
		}
		for _, u := range page.Uploads {
			up := Upload{Key: aws.ToString(u.Key), ID: aws.ToString(u.UploadId), Initiated: aws.ToTime(u.Initiated)}
			if strings.HasPrefix(up.Key, prefix) {
				ups = append(ups, up)
			}
		}
		if !aws.ToBool(page.IsTruncated) || (aws.ToString(page.NextKeyMarker) == "" && aws.ToString(page.NextUploadIdMarker) == "") {
			break
		}
		keyMarker, idMarker = page.NextKeyMarker, page.NextUploadIdMarker
	}
	if prefix != "" {
		// The prefix as an exact key: the one question MinIO answers for
		// uploads it started before a restart.
		seen := make(map[string]bool, len(ups))
		for _, u := range ups {
			seen[u.ID] = true
		}
		page, err := call(ctx, d, func(c *s3.Client) (*s3.ListMultipartUploadsOutput, error) {
			return c.ListMultipartUploads(ctx, &s3.ListMultipartUploadsInput{Bucket: &d.bucket, Prefix: &prefix})
		})
		if err != nil {
			return d.convert(err)
		}
		for _, u := range page.Uploads {
			if k := aws.ToString(u.Key); strings.HasPrefix(k, prefix) && !seen[aws.ToString(u.UploadId)] {
				ups = append(ups, Upload{Key: k, ID: aws.ToString(u.UploadId), Initiated: aws.ToTime(u.Initiated)})
			}
		}
	}
	// MinIO orders its bucket-wide list by start time: key order here.
	slices.SortFunc(ups, func(a, b Upload) int {
		return cmp.Or(strings.Compare(a.Key, b.Key), a.Initiated.Compare(b.Initiated), strings.Compare(a.ID, b.ID))
	})
	for _, u := range ups {
		if err := fn(u); err != nil {
			return err
		}
	}
	return nil
}

func (d *s3Driver) AbortUpload(ctx context.Context, key, id string) error {
	_, err := call(ctx, d, func(c *s3.Client) (*s3.AbortMultipartUploadOutput, error) {
		return c.AbortMultipartUpload(ctx, &s3.AbortMultipartUploadInput{Bucket: &d.bucket, Key: &key, UploadId: &id})
	})
	return d.convert(err)
}
