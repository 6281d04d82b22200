package flightsvc

import (
	"context"
	"errors"
	"fmt"
	"io"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/sluice-data/sluice/collect"
	"github.com/sluice-data/sluice/format"
	"github.com/sluice-data/sluice/store"
)

// ErrInvalid is matched by GetTo's errors that come from how the fetch was
// asked rather than from fetching: an output it cannot write, or a
// request the service refused as invalid (a column the dataset lacks, a
// malformed filter).
var ErrInvalid = errors.New("invalid request")

// invalidError says err is ErrInvalid without changing its words.
type invalidError struct{ err error }

func (e invalidError) Error() string        { return e.err.Error() }
func (e invalidError) Unwrap() error        { return e.err }
func (e invalidError) Is(target error) bool { return target == ErrInvalid }

func invalidf(format string, a ...any) error { return invalidError{fmt.Errorf(format, a...)} }

// GetToOptions configure GetTo: what to fetch (GetOptions), and where the
// batches go.
type GetToOptions struct {
	GetOptions
	// Output is where the batches go: "" counts them only, "-" writes
	// them to Stdout, anything else is a path or URL opened with
	// OpenOutput, where nothing appears unless every endpoint was
	// fetched.
	Output string
	// Format is the output's format (format.Choose picks it from a
	// name). An ordered one (an Arrow IPC file) lists the batches in
	// dataset order whatever Order they come in.
	Format format.Format
	// Stdout is where Output "-" writes.
	Stdout io.Writer
	// OpenOutput opens Output when it is a path or URL; the store it
	// returns is the caller's to close, after GetTo returns.
	OpenOutput store.Opener
	// Started, if set, is told the rows the service planned (-1 when it
	// did not say) before the first batch; Wrote, if set, the rows of
	// each batch once written. They are for progress reports.
	Started func(rows int64)
	Wrote   func(rows int64)
}

// GetResult is what GetTo fetched.
type GetResult struct {
	// Endpoints is how many endpoints the service planned.
	Endpoints int
	// Stats are the collector's figures: batches, rows, and the most it
	// held at once.
	collect.Stats
}

// GetTo fetches dataset from the Flight service at addr (Get) and writes
// its batches to opts.Output, or only counts them. On error the output is
// abandoned: no object appears, and a stream is left without its end, so
// that its reader sees an error rather than a short result. A refusal by
// the service is classified as a store's would be (ClientError); one for
// an invalid request, like a mistake in opts.Output, matches ErrInvalid.
// When ctx is done the error is ctx's.
func GetTo(ctx context.Context, addr, dataset string, opts GetToOptions) (GetResult, error) {
	r, err := Get(ctx, addr, dataset, opts.GetOptions)
	if err != nil {
		return GetResult{}, getError(ctx, addr, err)
	}
	defer r.Close()
	var sink collect.Sink
	switch {
	case opts.Output == "":
		sink = countSink{}
	case opts.Output == "-":
		s, err := collect.NewSink(opts.Stdout, opts.Format, r.Schema, nil)
		if err != nil {
			return GetResult{}, invalidf("-o -: %v", err)
		}
		sink = s
	default:
		st, key, err := opts.OpenOutput(ctx, opts.Output)
		if err != nil {
			return GetResult{}, err
		}
		s, err := collect.NewStoreSink(ctx, st, key, opts.Format, r.Schema, nil)
		var ne *format.NotObjectError
		var se *store.Error
		switch {
		case errors.As(err, &ne):
			return GetResult{}, invalidf("-o %s: names a directory, not a file", opts.Output)
		case errors.As(err, &se):
			return GetResult{}, err
		case err != nil:
			return GetResult{}, invalidf("-o %s: %v", opts.Output, err)
		}
		sink = s
	}
	if opts.Started != nil {
		opts.Started(r.Info.GetTotalRecords())
	}
	if opts.Wrote != nil {
		sink = reportSink{sink, opts.Wrote}
	}
	if err := collect.WriteStream(r.Stream, sink); err != nil {
		return GetResult{}, getError(ctx, addr, err)
	}
	return GetResult{Endpoints: len(r.Info.GetEndpoint()), Stats: r.Stats()}, nil
}

// getError gives a service's refusal the meaning of the same refusal by a
// store, and says in words what gRPC's codes mean.
func getError(ctx context.Context, addr string, err error) error {
	if ctx.Err() != nil {
		return ctx.Err() // interrupted: not the service's doing
	}
	if errors.Is(err, ErrInvalid) {
		return err
	}
	if status.Code(err) == codes.InvalidArgument {
		return invalidError{err}
	}
	return ClientError(addr, err)
}

// reportSink tells wrote the rows of each batch its Sink has written.
type reportSink struct {
	collect.Sink
	wrote func(rows int64)
}

func (r reportSink) Write(b collect.Batch) error {
	n := b.NumRows()
	if err := r.Sink.Write(b); err != nil {
		return err
	}
	r.wrote(n)
	return nil
}

// countSink keeps nothing: GetTo with no Output only counts.
type countSink struct{}

func (countSink) Write(collect.Batch) error { return nil }
func (countSink) Close() error              { return nil }
func (countSink) Abort()                    {}
