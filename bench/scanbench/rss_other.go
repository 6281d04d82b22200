//go:build !linux

package scanbench

import (
	"context"
	"errors"
	"io"
	"time"
)

// PeakRSS is only measured on Linux, where ru_maxrss has a known unit.
func PeakRSS(ctx context.Context, out io.Writer, name string, args ...string) (int64, time.Duration, error) {
	return 0, 0, errors.New("peak RSS is measured on Linux only")
}
