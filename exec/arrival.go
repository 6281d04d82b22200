package exec

import (
	"context"

	"github.com/apache/arrow-go/v18/arrow"
)

// arrivalSink is a sink that can take batches in any order, each with its
// key in the stream (increasing in stream order, with gaps where a batch
// was filtered away: the batch's ordinal, or its Position when the
// source's batches carry one), and still give what pushing them in order
// gives: an Arrow IPC file, whose footer lists the batches in their
// stream order wherever they are stored.
type arrivalSink interface {
	operator
	// takesAnyOrder reports whether pushAt may be used; a stage's
	// operator may take any order for some of its settings only.
	takesAnyOrder() bool
	// pushAt borrows rec, the batch at key.
	pushAt(ctx context.Context, rec arrow.RecordBatch, key []int64) error
}

// arrivalSinkOf is the sink right after the parallel front, when it can
// take the front's batches as they finish.
func arrivalSinkOf(op operator) (arrivalSink, bool) {
	s, ok := op.(arrivalSink)
	if !ok || !s.takesAnyOrder() {
		return nil, false
	}
	return s, true
}

// arrivalKey is the key of the batch at ordinal ord: its position in the
// dataset when it carries one (a scan in arrival order), else ord after
// the keys {1}, {2}... of batches pushed in order.
func arrivalKey(rec arrow.RecordBatch, ord int64) ([]int64, error) {
	pos, ok, err := PositionOf(rec)
	if err != nil || !ok {
		return []int64{ord + 1}, err
	}
	return []int64{pos.Group, pos.Batch}, nil
}
