package bench

import (
	"bytes"
	"math"
	"reflect"
	"strings"
	"testing"
	"time"
)

func sampleRecords() []Record {
	return []Record{
		{Kind: Put, Cell: 0, Concurrency: 2, Worker: 1, Object: 3, Key: "p/sluice-bench-x/obj-000003", ObjectSize: 1 << 20,
			Len: 1 << 20, Attempt: 1, Start: sec(0.25), FirstByte: sec(0.26), LastByte: sec(0.75), Bytes: 1 << 20},
		{Kind: Get, Cell: 1, Concurrency: 2, Object: 3, Key: `we"ird,key`, ObjectSize: 1 << 20, Off: 512, Len: 100,
			Attempt: 2, Start: sec(1), LastByte: sec(1.5), Err: "503 SlowDown, \"quoted\"", Process: 2, Processes: 4},
	}
}

// normal is what a record reads back as: times to the microsecond the
// files keep, and one process when none was said.
func normal(recs []Record) []Record {
	out := make([]Record, len(recs))
	for i, r := range recs {
		for _, d := range []*time.Duration{&r.Start, &r.FirstByte, &r.LastByte} {
			*d = d.Round(time.Microsecond)
		}
		r.Processes = max(r.Processes, 1)
		out[i] = r
	}
	return out
}

func TestReadRecordsRoundTrip(t *testing.T) {
	for _, format := range []string{"jsonl", "csv"} {
		var b bytes.Buffer
		if err := WriteRecords(&b, format, sampleRecords()); err != nil {
			t.Fatal(err)
		}
		got, err := ReadRecords(&b, format)
		if err != nil {
			t.Fatalf("%s: %v", format, err)
		}
		if want := normal(sampleRecords()); !reflect.DeepEqual(got, want) {
			t.Errorf("%s round trip:\n got %+v\nwant %+v", format, got, want)
		}
	}
}

// A file of a run before the process columns existed still reads.
func TestReadRecordsOlderFiles(t *testing.T) {
	line := `{"kind":"get","cell":0,"concurrency":8,"worker":3,"object":1,"key":"k","object_size":10,"offset":0,"length":10,"attempt":1,"start":0.5,"first_byte":null,"last_byte":0.75,"bytes":10,"error":null}` + "\n\n"
	got, err := ReadRecords(strings.NewReader(line), "jsonl")
	if err != nil {
		t.Fatal(err)
	}
	want := Record{Kind: Get, Concurrency: 8, Worker: 3, Object: 1, Key: "k", ObjectSize: 10, Len: 10, Attempt: 1,
		Start: sec(0.5), LastByte: sec(0.75), Bytes: 10, Processes: 1}
	if len(got) != 1 || got[0] != want {
		t.Errorf("got %+v", got)
	}
	csv := "start,kind,last_byte\n0.5,put,1\n"
	got, err = ReadRecords(strings.NewReader(csv), "csv")
	if err != nil || len(got) != 1 || got[0].Kind != Put || got[0].LastByte != time.Second {
		t.Errorf("columns by name: %+v, %v", got, err)
	}
}

func TestReadRecordsErrors(t *testing.T) {
	for _, tc := range []struct{ format, in, want string }{
		{"jsonl", "not json\n", "records line 1: not a JSON object"},
		{"jsonl", `{"kind":"del","start":0,"last_byte":1}`, `records line 1: bad kind "del": want put or get`},
		{"jsonl", `{"kind":"put","last_byte":1}`, "records line 1: no start"},
		{"jsonl", "\n" + `{"kind":"put","start":-1,"last_byte":1}`, `records line 2: bad start "-1"`},
		{"jsonl", `{"kind":"put","start":"NaN","last_byte":1}`, `bad start "NaN"`},
		{"jsonl", `{"kind":"put","start":1e300,"last_byte":1}`, `bad start`},
		{"jsonl", `{"kind":"put","start":2,"last_byte":1}`, "last_byte 1s is before start 2s"},
		{"jsonl", `{"kind":"put","start":0,"last_byte":1,"bytes":1.5}`, `bad bytes "1.5"`},
		{"jsonl", `{"kind":"put","start":0,"last_byte":1,"process":4,"processes":4}`, "process 4 of 4"},
		{"jsonl", `{"kind":["put"],"start":0,"last_byte":1}`, `bad kind`},
		{"jsonl", strings.Repeat("x", maxRecordLine+1), "longer than"},
		{"csv", "kind,start,last_byte\nput,0\n", "records line 2: no last_byte"},
		{"csv", "kind,start,last_byte\n\"put,0,1\n", "records: "},
		{"xml", "", "unknown records format"},
	} {
		_, err := ReadRecords(strings.NewReader(tc.in), tc.format)
		if err == nil || !strings.Contains(err.Error(), tc.want) || strings.Contains(err.Error(), "\n") {
			t.Errorf("%s %.60q: %v, want one line containing %q", tc.format, tc.in, err, tc.want)
		}
	}
}

func FuzzReadRecords(f *testing.F) {
	for _, format := range []string{"jsonl", "csv"} {
		var b bytes.Buffer
		WriteRecords(&b, format, sampleRecords())
		f.Add(b.Bytes(), format == "csv")
	}
	f.Add([]byte(`{"kind":"get","start":0.5,"last_byte":0.5}`), false)
	f.Add([]byte("kind,start,last_byte,processes\nput,0,1e-9,3\n"), true)
	f.Add([]byte(`{"kind":"put","start":0,"last_byte":1,"process":null,"first_byte":"0.1"}`), false)
	f.Fuzz(func(t *testing.T, data []byte, isCSV bool) {
		format := "jsonl"
		if isCSV {
			format = "csv"
		}
		recs, err := ReadRecords(bytes.NewReader(data), format)
		if err != nil {
			if strings.Contains(err.Error(), "\n") {
				t.Fatalf("error is not one line: %q", err)
			}
			return
		}
		// What was read writes and reads back the same (to the microsecond).
		var b bytes.Buffer
		if err := WriteRecords(&b, format, recs); err != nil {
			t.Fatal(err)
		}
		again, err := ReadRecords(&b, format)
		if err != nil {
			t.Fatalf("rewritten records do not read: %v\n%s", err, b.Bytes())
		}
		if want := normal(recs); !reflect.DeepEqual(normal(again), want) {
			t.Fatalf("round trip changed records:\n got %+v\nwant %+v", again, want)
		}
		// Whatever reads, the scale model takes without panicking, and
		// its figures are numbers.
		ms, err := Measure(recs, 1)
		if err != nil {
			return
		}
		for _, p := range Predict(ms, PredictConfig{Workers: []int{1, 1000}}) {
			if math.IsNaN(p.MiBps) || p.MiBps < 0 || p.PrefixesNeeded < 1 {
				t.Fatalf("prediction %+v from %+v", p, ms)
			}
		}
	})
}
