// Package azure is the az:// store: Azure Blob Storage through the
// official SDK (azblob). Importing it registers az:// (az://container/path,
// the account from the credentials) and the Data Lake forms
// abfs[s]://container@account.dfs.core.windows.net/path with package
// store, so that only programs that import it carry the SDK.
package azure

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"strings"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/Azure/azure-sdk-for-go/sdk/azidentity"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/blob"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/bloberror"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/blockblob"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/container"

	"github.com/sluice-data/sluice/store"
)

func init() {
	store.RegisterScheme("az", open)
	store.RegisterScheme("abfs", open)
	store.RegisterScheme("abfss", open)
}

type driver struct {
	c *container.Client
}

// open opens a container: "container", or "container@account.dfs.core.
// windows.net" (abfs), with credentials from AZURE_STORAGE_CONNECTION_STRING,
// or for AZURE_STORAGE_ACCOUNT (or the abfs URL's account) AZURE_STORAGE_KEY
// or else DefaultAzureCredential.
func open(ctx context.Context, bucket string, opts store.Options) (store.Driver, error) {
	name, host, _ := strings.Cut(bucket, "@")
	account := os.Getenv("AZURE_STORAGE_ACCOUNT")
	if host != "" {
		acct, _, ok := strings.Cut(host, ".")
		if !ok || !strings.HasSuffix(host, ".core.windows.net") {
			return nil, fmt.Errorf("want abfss://container@account.dfs.core.windows.net/path, not %q", bucket)
		}
		account = acct
	}
	// The SDK's own retries: Options.Attempts tries of a request (3 by
	// default); a caller that retries above the store asks for 1.
	copts := &azblob.ClientOptions{}
	if opts.Attempts == 1 {
		copts.Retry.MaxRetries = -1
	} else if opts.Attempts > 1 {
		copts.Retry.MaxRetries = int32(opts.Attempts - 1)
	}
	if cs := os.Getenv("AZURE_STORAGE_CONNECTION_STRING"); cs != "" {
		svc, err := azblob.NewClientFromConnectionString(cs, copts)
		if err != nil {
			return nil, fmt.Errorf("AZURE_STORAGE_CONNECTION_STRING: %v", oneLine(err))
		}
		return &driver{c: svc.ServiceClient().NewContainerClient(name)}, nil
	}
	if account == "" {
		return nil, errors.New("no Azure credentials: set AZURE_STORAGE_CONNECTION_STRING, or AZURE_STORAGE_ACCOUNT with AZURE_STORAGE_KEY or an Azure identity (az login, a managed identity, AZURE_CLIENT_ID...)")
	}
	url := fmt.Sprintf("https://%s.blob.core.windows.net/", account)
	if key := os.Getenv("AZURE_STORAGE_KEY"); key != "" {
		cred, err := azblob.NewSharedKeyCredential(account, key)
		if err != nil {
			return nil, fmt.Errorf("AZURE_STORAGE_KEY: %v", oneLine(err))
		}
		svc, err := azblob.NewClientWithSharedKeyCredential(url, cred, copts)
		if err != nil {
			return nil, err
		}
		return &driver{c: svc.ServiceClient().NewContainerClient(name)}, nil
	}
	// DefaultAzureCredential: the environment's service principal,
	// workload or managed identity, then the az and azd CLIs' logins. It
	// asks for a token at the first request, whose error says which
	// sources it tried.
	cred, err := azidentity.NewDefaultAzureCredential(nil)
	if err != nil {
		return nil, fmt.Errorf("no Azure credentials: %v", oneLine(err))
	}
	svc, err := azblob.NewClient(url, cred, copts)
	if err != nil {
		return nil, err
	}
	return &driver{c: svc.ServiceClient().NewContainerClient(name)}, nil
}

func oneLine(err error) string { return strings.Join(strings.Fields(err.Error()), " ") }

// short is err in one line: a service error by its code and status (the
// SDK's own text spans lines of request and response), kept for Classify.
func short(err error) error {
	var re *azcore.ResponseError
	var identity interface{ NonRetriable() }
	switch {
	case errors.As(err, &re):
		return &serviceError{re}
	case errors.As(err, &identity):
		// DefaultAzureCredential found no identity, or one was refused.
		return &identityError{err}
	}
	return err
}

type identityError struct{ err error }

func (e *identityError) Error() string {
	first, _, _ := strings.Cut(e.err.Error(), "\n")
	return "no Azure credentials: " + first + " (az login, a managed identity, AZURE_CLIENT_ID with a secret or certificate; or AZURE_STORAGE_CONNECTION_STRING, or AZURE_STORAGE_KEY)"
}

func (e *identityError) Unwrap() error { return e.err }

type serviceError struct{ re *azcore.ResponseError }

func (e *serviceError) Error() string {
	code := e.re.ErrorCode
	if code == "" {
		code = http.StatusText(e.re.StatusCode)
	}
	return fmt.Sprintf("%s (HTTP %d)", code, e.re.StatusCode)
}

func (e *serviceError) Unwrap() error { return e.re }

// tag is an ETag in one form: listings give it bare, reads quoted.
func tag(e *azcore.ETag) string {
	if e == nil || *e == "" {
		return ""
	}
	return `"` + strings.Trim(string(*e), `"`) + `"`
}

func (d *driver) List(ctx context.Context, prefix string, fn func(store.ObjectInfo) error) error {
	pager := d.c.NewListBlobsFlatPager(&container.ListBlobsFlatOptions{Prefix: &prefix})
	for pager.More() {
		page, err := pager.NextPage(ctx)
		if err != nil {
			return short(err)
		}
		for _, b := range page.Segment.BlobItems {
			o := store.ObjectInfo{Key: *b.Name}
			if p := b.Properties; p != nil {
				if p.ContentLength != nil {
					o.Size = *p.ContentLength
				}
				o.ETag = tag(p.ETag)
				if p.LastModified != nil {
					o.ModTime = *p.LastModified
				}
			}
			if err := fn(o); err != nil {
				return err
			}
		}
	}
	return nil
}

func (d *driver) Stat(ctx context.Context, key string) (store.ObjectInfo, error) {
	p, err := d.c.NewBlobClient(key).GetProperties(ctx, nil)
	if err != nil {
		return store.ObjectInfo{}, short(err)
	}
	o := store.ObjectInfo{Key: key, ETag: tag(p.ETag)}
	if p.ContentLength != nil {
		o.Size = *p.ContentLength
	}
	if p.LastModified != nil {
		o.ModTime = *p.LastModified
	}
	return o, nil
}

func (d *driver) ReadRange(ctx context.Context, key string, r store.Range, opts store.ReadOptions) (io.ReadCloser, store.ObjectInfo, error) {
	var cond *blob.AccessConditions
	if opts.IfMatch != "" {
		e := azcore.ETag(opts.IfMatch)
		cond = &blob.AccessConditions{ModifiedAccessConditions: &blob.ModifiedAccessConditions{IfMatch: &e}}
	}
	off, n := r.Off, r.Len
	if off < 0 || n == 0 {
		// Blob ranges have no suffix form: the size first.
		o, err := d.Stat(ctx, key)
		if err != nil {
			return nil, store.ObjectInfo{}, err
		}
		if opts.IfMatch != "" && o.ETag != opts.IfMatch {
			return nil, store.ObjectInfo{}, short(&azcore.ResponseError{StatusCode: http.StatusPreconditionFailed, ErrorCode: string(bloberror.ConditionNotMet)})
		}
		if n == 0 {
			return io.NopCloser(strings.NewReader("")), o, nil
		}
		off = max(0, o.Size+off)
		n = o.Size - off
		if n == 0 {
			return io.NopCloser(strings.NewReader("")), o, nil
		}
	}
	rng := blob.HTTPRange{Offset: off}
	if n > 0 {
		rng.Count = n
	}
	resp, err := d.c.NewBlobClient(key).DownloadStream(ctx, &blob.DownloadStreamOptions{Range: rng, AccessConditions: cond})
	if bloberror.HasCode(err, bloberror.InvalidRange) {
		// At or past the end: an empty body, as the Driver contract says.
		o, serr := d.Stat(ctx, key)
		if serr != nil {
			return nil, store.ObjectInfo{}, serr
		}
		return io.NopCloser(strings.NewReader("")), o, nil
	}
	if err != nil {
		return nil, store.ObjectInfo{}, short(err)
	}
	o := store.ObjectInfo{Key: key, ETag: tag(resp.ETag)}
	if resp.LastModified != nil {
		o.ModTime = *resp.LastModified
	}
	if cr := resp.ContentRange; cr != nil {
		if i := strings.LastIndexByte(*cr, '/'); i >= 0 {
			fmt.Sscan((*cr)[i+1:], &o.Size)
		}
	} else if resp.ContentLength != nil {
		o.Size = *resp.ContentLength
	}
	return resp.Body, o, nil
}

// writer stages the object's blocks as they fill and commits the block
// list on Close: nothing is visible before; Abort cancels the upload and
// the uncommitted blocks are dropped by the service.
type writer struct {
	pw     *io.PipeWriter
	done   chan error
	cancel context.CancelFunc
	closed bool
}

func (d *driver) NewWriter(ctx context.Context, key string, opts store.WriteOptions) (store.DriverWriter, error) {
	ctx, cancel := context.WithCancel(ctx)
	block := opts.PartSize
	if block <= 0 {
		block = 8 << 20
	}
	block = max(block, 1<<20)
	conc := opts.Concurrency
	if conc <= 0 {
		conc = 4
	}
	if opts.Memory > 0 {
		conc = int(max(1, min(int64(conc), opts.Memory/block-1)))
	}
	pr, pw := io.Pipe()
	w := &writer{pw: pw, done: make(chan error, 1), cancel: cancel}
	var body io.Reader = pr
	if opts.Stored != nil {
		body = io.TeeReader(pr, storedWriter(opts.Stored))
	}
	go func() {
		_, err := d.c.NewBlockBlobClient(key).UploadStream(ctx, body, &blockblob.UploadStreamOptions{BlockSize: block, Concurrency: conc})
		err = short(err)
		pr.CloseWithError(err)
		w.done <- err
	}()
	return w, nil
}

// storedWriter counts bytes as the upload takes them.
type storedWriter func(int64)

func (s storedWriter) Write(p []byte) (int, error) { s(int64(len(p))); return len(p), nil }

func (w *writer) Write(p []byte) (int, error) { return w.pw.Write(p) }

func (w *writer) Close() error {
	if w.closed {
		return errors.New("writer closed")
	}
	w.closed = true
	w.pw.Close()
	err := <-w.done
	w.cancel()
	return err
}

func (w *writer) Abort() error {
	if w.closed {
		return nil
	}
	w.closed = true
	w.cancel()
	w.pw.CloseWithError(context.Canceled)
	<-w.done
	return nil
}

func (d *driver) Delete(ctx context.Context, key string) error {
	_, err := d.c.NewBlobClient(key).Delete(ctx, nil)
	return short(err)
}

func (d *driver) Classify(err error) store.Kind {
	var re *azcore.ResponseError
	var ie *identityError
	switch {
	case errors.As(err, &ie):
		return store.KindPermission
	case bloberror.HasCode(err, bloberror.BlobNotFound, bloberror.ContainerNotFound, bloberror.ResourceNotFound):
		return store.KindNotFound
	case bloberror.HasCode(err, bloberror.ConditionNotMet):
		return store.KindPrecondition
	case errors.As(err, &re):
		return store.KindOfStatus(re.StatusCode)
	}
	return store.KindOfTransport(err)
}

func (d *driver) Close() error { return nil }
