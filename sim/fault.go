package sim

import "github.com/sluice-data/sluice/store"

// fault is an error the link model injected. It is retryable by
// construction, so errors.Is(err, store.ErrRetryable) holds and
// store.KindOf classifies it even without this package's Classify.
type fault struct{ msg string }

func (f *fault) Error() string { return f.msg }

func (f *fault) Is(target error) bool { return target == store.ErrRetryable }

// Errors the model injects. All classify as store.KindRetryable.
var (
	// ErrSlowDown fails a request before any byte, as S3 does when throttling.
	ErrSlowDown error = &fault{"503 SlowDown (simulated)"}
	// ErrRateLimited is the 503 SlowDown of a request over its key
	// prefix's request rate (Profile.ReqWrite, ReqRead).
	ErrRateLimited error = &fault{"503 SlowDown (simulated: request rate of the prefix)"}
	// ErrReset fails a read body part way through.
	ErrReset error = &fault{"connection reset (simulated)"}
)
