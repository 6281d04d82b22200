package bench

import (
	"bufio"
	"encoding/csv"
	"encoding/json"
	"fmt"
	"io"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"
)

// Kind is what a request did.
type Kind string

const (
	// Put writes a whole object.
	Put Kind = "put"
	// Get reads a whole object or one range of it.
	Get Kind = "get"
)

// Record is one request attempt, as the client saw it. Times are offsets
// from the run's start (Result.Start), so records of one run line up.
type Record struct {
	Kind Kind
	// Cell numbers the (object size, concurrency) cell of the run.
	Cell        int
	Concurrency int
	// Worker is which of the cell's Concurrency workers made the request.
	Worker int
	// Object numbers the object within its cell; Key names it.
	Object     int
	Key        string
	ObjectSize int64
	// Off and Len are the bytes asked for: the whole object, or one range
	// when gets are ranged.
	Off, Len int64
	// Attempt is 1 for the first try, 2 for the first retry, and so on.
	Attempt int
	// Start is when the request was issued. FirstByte is, for a get, when
	// the first body byte arrived; for a put, when the store accepted the
	// request and the body started to flow. Zero means it never happened.
	// LastByte is when the request ended: the last body byte read, the
	// upload committed, or the error.
	Start, FirstByte, LastByte time.Duration
	// Bytes is how many body bytes moved, even for a failed attempt.
	Bytes int64
	// Err is empty for success.
	Err string
	// Process is which of Processes worker processes made the request,
	// in a run fanned out over processes (RunWorkers); 0 of 1 otherwise.
	Process, Processes int
}

// OK reports whether the attempt succeeded.
func (r Record) OK() bool { return r.Err == "" }

// RecordFields documents the columns of WriteRecords, in order.
func RecordFields() []struct{ Name, Doc string } { return slices.Clone(recordFields) }

var recordFields = []struct{ Name, Doc string }{
	{"kind", "put or get"},
	{"cell", "which (size, concurrency) cell of the run, from 0"},
	{"concurrency", "workers in that cell"},
	{"worker", "which worker made the request, from 0"},
	{"object", "object number within the cell"},
	{"key", "the object's key"},
	{"object_size", "the object's size in bytes"},
	{"offset", "first byte asked for"},
	{"length", "bytes asked for"},
	{"attempt", "1 for the first try, 2 for the first retry, ..."},
	{"start", "seconds from the run's start when the request was issued"},
	{"first_byte", "seconds from the run's start to the first body byte (get) or to the upload starting (put); empty/null if none"},
	{"last_byte", "seconds from the run's start to the end: last byte read, upload committed, or error"},
	{"bytes", "body bytes moved (also for a failed attempt)"},
	{"error", "empty/null on success, else the error"},
	{"process", "which worker process made the request, from 0 (--workers; 0 otherwise)"},
	{"processes", "worker processes in that run (--workers; 1 otherwise)"},
}

func secs(d time.Duration) string { return strconv.FormatFloat(d.Seconds(), 'f', 6, 64) }

func (r Record) columns() []string {
	fb := ""
	if r.FirstByte > 0 {
		fb = secs(r.FirstByte)
	}
	return []string{
		string(r.Kind), strconv.Itoa(r.Cell), strconv.Itoa(r.Concurrency), strconv.Itoa(r.Worker),
		strconv.Itoa(r.Object), r.Key, strconv.FormatInt(r.ObjectSize, 10),
		strconv.FormatInt(r.Off, 10), strconv.FormatInt(r.Len, 10), strconv.Itoa(r.Attempt),
		secs(r.Start), fb, secs(r.LastByte), strconv.FormatInt(r.Bytes, 10), r.Err,
		strconv.Itoa(r.Process), strconv.Itoa(max(r.Processes, 1)),
	}
}

// MarshalJSON writes the fields of RecordFields, times in seconds.
func (r Record) MarshalJSON() ([]byte, error) {
	var b strings.Builder
	b.WriteByte('{')
	for i, v := range r.columns() {
		if i > 0 {
			b.WriteByte(',')
		}
		name := recordFields[i].Name
		b.WriteString(strconv.Quote(name))
		b.WriteByte(':')
		switch {
		case v == "" && (name == "first_byte" || name == "error"):
			b.WriteString("null")
		case name == "kind" || name == "key" || name == "error":
			q, _ := json.Marshal(v)
			b.Write(q)
		default:
			b.WriteString(v)
		}
	}
	b.WriteByte('}')
	return []byte(b.String()), nil
}

// RecordFormat picks the format WriteRecords uses from a file name:
// "jsonl" for .jsonl and .ndjson, "csv" for .csv.
func RecordFormat(name string) (string, error) {
	switch strings.ToLower(filepath.Ext(name)) {
	case ".jsonl", ".ndjson":
		return "jsonl", nil
	case ".csv":
		return "csv", nil
	}
	return "", fmt.Errorf("records file %q: want a .jsonl or .csv name", name)
}

// WriteRecords writes records as JSON lines ("jsonl", one object a line)
// or CSV with a header ("csv"); the fields are RecordFields.
func WriteRecords(w io.Writer, format string, recs []Record) error {
	bw := bufio.NewWriter(w)
	switch format {
	case "jsonl":
		for _, r := range recs {
			b, _ := r.MarshalJSON()
			bw.Write(b)
			bw.WriteByte('\n')
		}
	case "csv":
		cw := csv.NewWriter(bw)
		head := make([]string, len(recordFields))
		for i, f := range recordFields {
			head[i] = f.Name
		}
		cw.Write(head)
		for _, r := range recs {
			cw.Write(r.columns())
		}
		cw.Flush()
		if err := cw.Error(); err != nil {
			return err
		}
	default:
		return fmt.Errorf("unknown records format %q (want jsonl or csv)", format)
	}
	return bw.Flush()
}
