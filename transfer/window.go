package transfer

import (
	"github.com/sluice-data/sluice/fetch"
	"github.com/sluice-data/sluice/store"
)

// Window is the range size objects are read in: within the 8-16 MiB that
// object stores serve best, and small enough that a default budget keeps
// 32 of them in flight.
const Window = 8 << 20

// windowRequests cuts objects into Window-sized units, each tagged with its
// object's index; an empty object is one empty unit, so it is not skipped.
func windowRequests(objects []store.ObjectInfo) []fetch.Request {
	var reqs []fetch.Request
	for i, o := range objects {
		if o.Size == 0 {
			reqs = append(reqs, fetch.Request{Key: o.Key, ETag: o.ETag, Tag: i})
			continue
		}
		for off := int64(0); off < o.Size; off += Window {
			reqs = append(reqs, fetch.Request{
				Key:    o.Key,
				Ranges: []store.Range{{Off: off, Len: min(Window, o.Size-off)}},
				ETag:   o.ETag,
				Size:   o.Size,
				Tag:    i,
			})
		}
	}
	return reqs
}
