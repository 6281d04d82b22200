package format

import (
	"context"
	"strings"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/sluice-data/sluice/internal/retry"
	"github.com/sluice-data/sluice/store"
)

// Object is a Writer into an object of a store, which appears only when
// Close returns nil (the store writes it under a temporary name or as an
// unfinished multipart upload until then); Abort leaves nothing.
type Object struct {
	*Writer
	sw *store.Writer
}

// Create starts writing key in st in format f.
func Create(ctx context.Context, st *store.Store, key string, f Format, schema *arrow.Schema, mem memory.Allocator) (*Object, error) {
	return CreateOptions(ctx, st, key, f, schema, mem, Options{})
}

// CreateOptions is Create with options.
func CreateOptions(ctx context.Context, st *store.Store, key string, f Format, schema *arrow.Schema, mem memory.Allocator, o Options) (*Object, error) {
	if err := o.Check(); err != nil {
		return nil, err
	}
	if key == "" || strings.HasSuffix(key, "/") {
		return nil, &NotObjectError{URL: st.URL(key)}
	}
	// Every request of the upload is retried by the one policy: the
	// bytes already written cannot be asked for again.
	sw, err := st.NewWriter(ctx, key, store.WriteOptions{Memory: o.UploadMemory, Retry: retry.Policy{}.Do})
	if err != nil {
		return nil, err
	}
	w, err := NewWriterOptions(sw, f, schema, mem, o)
	if err != nil {
		_ = sw.Abort()
		return nil, err
	}
	return &Object{Writer: w, sw: sw}, nil
}

// Close completes the format and commits the object.
func (o *Object) Close() error {
	if err := o.Writer.Close(); err != nil {
		_ = o.sw.Abort()
		return err
	}
	return o.sw.Close()
}

// Abort abandons the object.
func (o *Object) Abort() {
	o.Writer.Abort()
	_ = o.sw.Abort()
}

// NotObjectError is an output that names a directory or prefix, not an
// object.
type NotObjectError struct{ URL string }

func (e *NotObjectError) Error() string { return e.URL + " names a directory, not a file" }
