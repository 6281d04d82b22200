package store

import (
	"context"
	"errors"
	"time"
)

// Upload is a multipart upload that was started and neither completed nor
// aborted: its parts are stored (and billed) but no object is visible.
// A writer that was killed (SIGKILL, a lost machine) leaves one behind.
type Upload struct {
	Key       string
	ID        string
	Initiated time.Time
}

// UploadLister is a driver with multipart uploads to list and abort.
type UploadLister interface {
	// ListUploads calls fn for every pending upload whose key starts
	// with prefix, in key order.
	ListUploads(ctx context.Context, prefix string, fn func(Upload) error) error
	// AbortUpload discards a pending upload and its parts. An upload
	// already gone is ErrNotFound, or no error (MinIO does not say).
	AbortUpload(ctx context.Context, key, id string) error
}

func (s *Store) uploads(op, key string) (UploadLister, error) {
	ul, ok := s.d.(UploadLister)
	if !ok {
		return nil, s.invalid(op, key, errors.New("only s3:// stores have multipart uploads"))
	}
	if err := checkKey(key, true); err != nil {
		return nil, s.invalid(op, key, err)
	}
	return ul, nil
}

// HasUploads says whether the store has multipart uploads (s3://).
func (s *Store) HasUploads() bool { _, ok := s.d.(UploadLister); return ok }

// ListUploads calls fn for every pending multipart upload under prefix.
func (s *Store) ListUploads(ctx context.Context, prefix string, fn func(Upload) error) error {
	ul, err := s.uploads("list uploads", prefix)
	if err != nil {
		return err
	}
	return s.wrap("list uploads", prefix, ul.ListUploads(ctx, prefix, fn))
}

// AbortUpload aborts one pending multipart upload.
func (s *Store) AbortUpload(ctx context.Context, key, id string) error {
	ul, err := s.uploads("abort upload", key)
	if err != nil {
		return err
	}
	if id == "" {
		return s.invalid("abort upload", key, errors.New("empty upload id"))
	}
	return s.wrap("abort upload", key, ul.AbortUpload(ctx, key, id))
}
