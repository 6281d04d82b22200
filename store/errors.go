package store

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"
)

// Kind classifies a storage error once, where it is made, so callers decide
// (retry, report, exit code) without knowing the backend.
type Kind int

const (
	// KindUnknown is an error a driver could not classify; treated as permanent.
	KindUnknown Kind = iota
	// KindNotFound: the bucket, key or directory does not exist.
	KindNotFound
	// KindPermission: credentials are missing, wrong or not allowed.
	KindPermission
	// KindRetryable: throttling (503 SlowDown), a reset or a stall; retry with backoff.
	KindRetryable
	// KindPrecondition: the object changed (ETag mismatch) since it was pinned.
	KindPrecondition
	// KindInvalid: the caller asked for something malformed (bad URL, a key escaping the root).
	KindInvalid
	// KindPermanent: anything else that will not succeed on retry.
	KindPermanent
	// KindCanceled: the context was cancelled or timed out.
	KindCanceled
)

func (k Kind) String() string {
	switch k {
	case KindNotFound:
		return "not found"
	case KindPermission:
		return "permission denied"
	case KindRetryable:
		return "retryable"
	case KindPrecondition:
		return "object changed"
	case KindInvalid:
		return "invalid"
	case KindPermanent:
		return "permanent"
	case KindCanceled:
		return "canceled"
	}
	return "unknown"
}

// Sentinels usable with errors.Is against any error from this package.
var (
	ErrNotFound     = errors.New("not found")
	ErrPermission   = errors.New("permission denied")
	ErrRetryable    = errors.New("retryable")
	ErrPrecondition = errors.New("object changed")
	ErrInvalid      = errors.New("invalid")
)

// Error is every error the Store returns: what was attempted, on what, and
// its Kind. Message stays one line so the CLI can print it as is.
type Error struct {
	Op   string // "list", "stat", "read", "write", "delete", "open"
	URL  string // the object or prefix URL
	Kind Kind
	Err  error
}

func (e *Error) Error() string {
	return fmt.Sprintf("%s %s: %s", e.Op, e.URL, oneLine(e.Err))
}

func (e *Error) Unwrap() error { return e.Err }

// Is makes errors.Is(err, store.ErrNotFound) work whatever the backend.
func (e *Error) Is(target error) bool {
	switch target {
	case ErrNotFound:
		return e.Kind == KindNotFound
	case ErrPermission:
		return e.Kind == KindPermission
	case ErrRetryable:
		return e.Kind == KindRetryable
	case ErrPrecondition:
		return e.Kind == KindPrecondition
	case ErrInvalid:
		return e.Kind == KindInvalid
	}
	return false
}

// KindOf returns the Kind of any error: a *Error's own kind, a sentinel's,
// or KindCanceled for context errors.
func KindOf(err error) Kind {
	if err == nil {
		return KindUnknown
	}
	var se *Error
	if errors.As(err, &se) {
		return se.Kind
	}
	switch {
	case errors.Is(err, context.Canceled), errors.Is(err, context.DeadlineExceeded):
		return KindCanceled
	case errors.Is(err, ErrNotFound):
		return KindNotFound
	case errors.Is(err, ErrPermission):
		return KindPermission
	case errors.Is(err, ErrRetryable):
		return KindRetryable
	case errors.Is(err, ErrPrecondition):
		return KindPrecondition
	case errors.Is(err, ErrInvalid):
		return KindInvalid
	}
	return KindUnknown
}

// IsRetryable reports whether err is worth retrying.
func IsRetryable(err error) bool { return KindOf(err) == KindRetryable }

func oneLine(err error) string {
	s, _, _ := strings.Cut(err.Error(), "\n")
	return s
}

// KindOfStatus is the Kind of an HTTP status an object store answered
// with, the one mapping the drivers that speak HTTP share.
func KindOfStatus(code int) Kind {
	switch {
	case code == http.StatusNotFound || code == http.StatusGone:
		return KindNotFound
	case code == http.StatusUnauthorized || code == http.StatusForbidden:
		return KindPermission
	case code == http.StatusPreconditionFailed:
		return KindPrecondition
	case code == http.StatusTooManyRequests || code == http.StatusRequestTimeout || code >= 500:
		return KindRetryable
	case code == http.StatusBadRequest:
		return KindInvalid
	}
	return KindPermanent
}

// KindOfTransport is the Kind of an error no server answered with: a
// cancelled or expired context, an error marked retryable (a stall), a
// timeout, a reset or refused connection (a *url.Error); KindUnknown
// otherwise.
func KindOfTransport(err error) Kind {
	var timeout interface{ Timeout() bool }
	var ue *url.Error
	switch {
	case errors.Is(err, context.Canceled), errors.Is(err, context.DeadlineExceeded):
		return KindCanceled
	case untrustedCert(err):
		return KindPermanent
	case errors.Is(err, ErrRetryable), errors.As(err, &timeout) && timeout.Timeout(), errors.As(err, &ue):
		return KindRetryable
	}
	return KindUnknown
}
