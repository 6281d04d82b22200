package bench

import (
	"bufio"
	"bytes"
	"encoding/csv"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"
	"time"
)

// maxRecordLine bounds one JSON line, so a file that is not records cannot
// make the reader hold it all as one line.
const maxRecordLine = 1 << 20

// ReadRecords reads what WriteRecords wrote ("jsonl" or "csv"), also files
// of older runs without the process columns. Fields are matched by name,
// so columns may come in any order; unknown ones are ignored. Errors are
// one line naming the line and the field.
func ReadRecords(r io.Reader, format string) ([]Record, error) {
	switch format {
	case "jsonl":
		return readJSONL(r)
	case "csv":
		return readCSV(r)
	}
	return nil, fmt.Errorf("unknown records format %q (want jsonl or csv)", format)
}

func readJSONL(r io.Reader) ([]Record, error) {
	var recs []Record
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), maxRecordLine)
	for line := 1; sc.Scan(); line++ {
		b := bytes.TrimSpace(sc.Bytes())
		if len(b) == 0 {
			continue
		}
		var fields map[string]json.RawMessage
		if err := json.Unmarshal(b, &fields); err != nil {
			return nil, fmt.Errorf("records line %d: not a JSON object: %s", line, oneLine(err))
		}
		get := func(name string) (string, bool, error) {
			raw, ok := fields[name]
			if !ok || string(raw) == "null" {
				return "", false, nil
			}
			if raw[0] == '"' {
				var s string
				if err := json.Unmarshal(raw, &s); err != nil {
					return "", false, err
				}
				return s, true, nil
			}
			return string(raw), true, nil
		}
		rec, err := parseRecord(get)
		if err != nil {
			return nil, fmt.Errorf("records line %d: %w", line, err)
		}
		recs = append(recs, rec)
	}
	if err := sc.Err(); err != nil {
		if errors.Is(err, bufio.ErrTooLong) {
			return nil, fmt.Errorf("records: a line longer than %d bytes: not a records file", maxRecordLine)
		}
		return nil, fmt.Errorf("records: %w", err)
	}
	return recs, nil
}

func readCSV(r io.Reader) ([]Record, error) {
	cr := csv.NewReader(r)
	cr.FieldsPerRecord = -1
	cr.ReuseRecord = true
	head, err := cr.Read()
	if err == io.EOF {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("records: %s", oneLine(err))
	}
	col := map[string]int{}
	for i, h := range head {
		col[strings.TrimSpace(h)] = i
	}
	var recs []Record
	for {
		row, err := cr.Read()
		if err == io.EOF {
			return recs, nil
		}
		if err != nil {
			return nil, fmt.Errorf("records: %s", oneLine(err))
		}
		line, _ := cr.FieldPos(0)
		get := func(name string) (string, bool, error) {
			i, ok := col[name]
			if !ok || i >= len(row) || row[i] == "" {
				return "", false, nil
			}
			return row[i], true, nil
		}
		rec, err := parseRecord(get)
		if err != nil {
			return nil, fmt.Errorf("records line %d: %w", line, err)
		}
		recs = append(recs, rec)
	}
}

// parseRecord builds a Record from its named fields. get says whether a
// field is there (a null or an empty cell is not).
func parseRecord(get func(name string) (string, bool, error)) (Record, error) {
	var rec Record
	var err error
	field := func(name string, required bool, parse func(string) error) {
		if err != nil {
			return
		}
		v, ok, gerr := get(name)
		switch {
		case gerr != nil:
			err = fmt.Errorf("bad %s: %s", name, oneLine(gerr))
		case !ok && required:
			err = fmt.Errorf("no %s", name)
		case ok:
			if perr := parse(v); perr != nil {
				err = fmt.Errorf("bad %s %.40q: %v", name, v, perr)
			}
		}
	}
	count := func(p *int) func(string) error {
		return func(v string) error {
			n, err := strconv.Atoi(v)
			if err != nil || n < 0 {
				return errors.New("want a whole number >= 0")
			}
			*p = n
			return nil
		}
	}
	bytesOf := func(p *int64) func(string) error {
		return func(v string) error {
			n, err := strconv.ParseInt(v, 10, 64)
			if err != nil || n < 0 {
				return errors.New("want a whole number >= 0")
			}
			*p = n
			return nil
		}
	}
	seconds := func(p *time.Duration) func(string) error {
		return func(v string) error {
			f, err := strconv.ParseFloat(v, 64)
			// A run of more than a century is not a run.
			if err != nil || !(f >= 0 && f < 3e9) {
				return errors.New("want seconds >= 0")
			}
			*p = time.Duration(math.Round(f * 1e9))
			return nil
		}
	}
	field("kind", true, func(v string) error {
		if rec.Kind = Kind(v); rec.Kind != Put && rec.Kind != Get {
			return errors.New("want put or get")
		}
		return nil
	})
	field("cell", false, count(&rec.Cell))
	field("concurrency", false, count(&rec.Concurrency))
	field("worker", false, count(&rec.Worker))
	field("object", false, count(&rec.Object))
	field("key", false, func(v string) error { rec.Key = v; return nil })
	field("object_size", false, bytesOf(&rec.ObjectSize))
	field("offset", false, bytesOf(&rec.Off))
	field("length", false, bytesOf(&rec.Len))
	field("attempt", false, count(&rec.Attempt))
	field("start", true, seconds(&rec.Start))
	field("first_byte", false, seconds(&rec.FirstByte))
	field("last_byte", true, seconds(&rec.LastByte))
	field("bytes", false, bytesOf(&rec.Bytes))
	field("error", false, func(v string) error { rec.Err = v; return nil })
	field("process", false, count(&rec.Process))
	field("processes", false, count(&rec.Processes))
	if err != nil {
		return Record{}, err
	}
	if rec.LastByte < rec.Start {
		return Record{}, fmt.Errorf("last_byte %v is before start %v", rec.LastByte, rec.Start)
	}
	if rec.Processes == 0 {
		rec.Processes = 1
	}
	if rec.Process >= rec.Processes {
		return Record{}, fmt.Errorf("process %d of %d", rec.Process, rec.Processes)
	}
	return rec, nil
}
