package arrowtest

import (
	"context"
	"errors"
	"sync"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/flight"
)

// Got is a batch a Flight client received, with the key that its
// endpoint and app_metadata gave it.
type Got[K any] struct {
	Key K
	Rec arrow.RecordBatch
}

// DoGets fetches every endpoint of info at once with plain DoGets, as any
// arrow-go Flight client would, and keys each batch with key(endpoint,
// app_metadata). The caller releases the batches; on an error the test
// fails holding none.
func DoGets[K any](t testing.TB, client flight.Client, info *flight.FlightInfo, key func(ep *flight.FlightEndpoint, meta []byte) (K, error)) []Got[K] {
	t.Helper()
	var (
		mu    sync.Mutex
		items []Got[K]
		wg    sync.WaitGroup
	)
	errs := make([]error, len(info.Endpoint))
	for i, ep := range info.Endpoint {
		wg.Go(func() {
			st, err := client.DoGet(context.Background(), ep.Ticket)
			if err != nil {
				errs[i] = err
				return
			}
			r, err := flight.NewRecordReader(st)
			if err != nil {
				errs[i] = err
				return
			}
			defer r.Release()
			for r.Next() {
				k, err := key(ep, r.LatestAppMetadata())
				if err != nil {
					errs[i] = err
					return
				}
				rec := r.RecordBatch()
				rec.Retain()
				mu.Lock()
				items = append(items, Got[K]{k, rec})
				mu.Unlock()
			}
			errs[i] = r.Err()
		})
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		for _, it := range items {
			it.Rec.Release()
		}
		t.Fatal(err)
	}
	return items
}
