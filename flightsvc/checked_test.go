package flightsvc

import (
	"io"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/flight"
	"github.com/apache/arrow-go/v18/arrow/ipc"
	"github.com/apache/arrow-go/v18/arrow/memory"
)

// flightData records and replays the messages of a Flight stream.
type flightData struct{ msgs []*flight.FlightData }

// Send keeps a copy: the writer reuses what it sends.
func (d *flightData) Send(fd *flight.FlightData) error {
	d.msgs = append(d.msgs, &flight.FlightData{
		DataHeader: append([]byte(nil), fd.DataHeader...),
		DataBody:   append([]byte(nil), fd.DataBody...),
	})
	return nil
}
func (d *flightData) Recv() (*flight.FlightData, error) {
	if len(d.msgs) == 0 {
		return nil, io.EOF
	}
	fd := d.msgs[0]
	d.msgs = d.msgs[1:]
	return fd, nil
}

// TestCheckedStream: a Flight stream read through checkedStream gives its
// batch when sound, and an error (not a panic) when a message's body is
// shorter than its metadata says or its metadata is cut.
func TestCheckedStream(t *testing.T) {
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	stream := func() *flightData {
		b := array.NewStringBuilder(mem)
		defer b.Release()
		b.AppendValues([]string{"a", "bb", "ccc"}, nil)
		col := b.NewArray()
		defer col.Release()
		sc := arrow.NewSchema([]arrow.Field{{Name: "s", Type: arrow.BinaryTypes.String}}, nil)
		rec := array.NewRecordBatch(sc, []arrow.Array{col}, 3)
		defer rec.Release()
		d := &flightData{}
		w := flight.NewRecordWriter(d, ipc.WithSchema(sc), ipc.WithAllocator(mem))
		if err := w.Write(rec); err != nil {
			t.Fatal(err)
		}
		if err := w.Close(); err != nil {
			t.Fatal(err)
		}
		return d
	}
	read := func(d *flightData) (int64, error) {
		r, err := flight.NewRecordReader(checkedStream{d}, ipc.WithAllocator(mem))
		if err != nil {
			return 0, err
		}
		defer r.Release()
		var rows int64
		for r.Next() {
			rows += r.RecordBatch().NumRows()
		}
		return rows, r.Err()
	}
	if rows, err := read(stream()); err != nil || rows != 3 {
		t.Fatalf("sound stream: %d rows, %v", rows, err)
	}
	short := stream()
	short.msgs[1].DataBody = short.msgs[1].DataBody[:8]
	if _, err := read(short); err == nil || !strings.Contains(err.Error(), "arrived") {
		t.Fatalf("short body: %v, want an error", err)
	}
	cut := stream()
	cut.msgs[0].DataHeader = cut.msgs[0].DataHeader[:len(cut.msgs[0].DataHeader)/2]
	if _, err := read(cut); err == nil {
		t.Fatal("cut schema metadata read without an error")
	}
}
