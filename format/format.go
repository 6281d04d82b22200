package format

import (
	"errors"
	"fmt"
	"strings"
)

// Format is an output format.
type Format int

const (
	// Unknown is no format: the zero value.
	Unknown Format = iota
	// IPCFile is the Arrow IPC file format.
	IPCFile
	// IPCStream is the Arrow IPC stream format.
	IPCStream
	// Parquet is a Parquet file.
	Parquet
	// CSV is comma-separated values with a header line.
	CSV
	// JSONLines is one JSON object a row, a row a line.
	JSONLines
)

// formats is the one table of names and suffixes; the first suffix is
// the one help texts suggest.
var formats = [...]struct {
	f        Format
	name     string
	suffixes []string
	desc     string
}{
	{IPCFile, "arrow", []string{".arrow", ".feather", ".ipc"}, "Arrow IPC file"},
	{IPCStream, "arrows", []string{".arrows"}, "Arrow IPC stream"},
	{Parquet, "parquet", []string{".parquet", ".pq"}, "Parquet"},
	{CSV, "csv", []string{".csv"}, "CSV"},
	{JSONLines, "jsonl", []string{".jsonl", ".ndjson"}, "JSON lines"},
}

// ErrUnknown is wrapped by the errors of Of, Parse and Choose.
var ErrUnknown = errors.New("unknown output format")

func (f Format) String() string {
	for _, e := range formats {
		if e.f == f {
			return e.desc
		}
	}
	return "unknown format"
}

// Name is the format's name as Parse takes it ("arrow", "parquet"...).
func (f Format) Name() string {
	for _, e := range formats {
		if e.f == f {
			return e.name
		}
	}
	return ""
}

// Suffixes are the name endings Of takes for f, the usual one first.
func (f Format) Suffixes() []string {
	for _, e := range formats {
		if e.f == f {
			return append([]string(nil), e.suffixes...)
		}
	}
	return nil
}

// Ordered says whether a writer of f can take batches out of order
// (WriteAt) and still list them in order: only the Arrow IPC file.
func (f Format) Ordered() bool { return f == IPCFile }

// Formats lists every format, in the order help texts name them.
func Formats() []Format {
	out := make([]Format, len(formats))
	for i, e := range formats {
		out[i] = e.f
	}
	return out
}

// Of chooses a format by the suffix of a path, key or URL (any case).
func Of(name string) (Format, error) {
	n := strings.ToLower(name)
	for _, e := range formats {
		for _, s := range e.suffixes {
			if strings.HasSuffix(n, s) {
				return e.f, nil
			}
		}
	}
	return Unknown, fmt.Errorf("%w: cannot tell it from the name %s (want %s)", ErrUnknown, name, SuffixHelp())
}

// Parse takes a format's name (arrow, arrows, parquet, csv, jsonl), or
// any of its suffixes with or without the dot.
func Parse(name string) (Format, error) {
	n := strings.ToLower(strings.TrimSpace(name))
	for _, e := range formats {
		if n == e.name {
			return e.f, nil
		}
		for _, s := range e.suffixes {
			if n == s || n == s[1:] {
				return e.f, nil
			}
		}
	}
	return Unknown, fmt.Errorf("%w %q (want %s)", ErrUnknown, name, NameHelp())
}

// Choose is the format of an output dest: the format named by flag when
// it is not empty, else an Arrow IPC stream for "-" (standard output),
// else the one dest's suffix names.
func Choose(dest, flag string) (Format, error) {
	switch {
	case flag != "":
		return Parse(flag)
	case dest == "-":
		return IPCStream, nil
	}
	return Of(dest)
}

// SuffixHelp lists the suffixes for a help text or an error.
func SuffixHelp() string {
	var parts []string
	for _, e := range formats {
		p := e.suffixes[0]
		if len(e.suffixes) > 1 {
			p += " (" + strings.Join(e.suffixes[1:], ", ") + ")"
		}
		parts = append(parts, p)
	}
	return strings.Join(parts, ", ")
}

// NameHelp lists the names Parse takes.
func NameHelp() string {
	var parts []string
	for _, e := range formats {
		parts = append(parts, e.name)
	}
	return strings.Join(parts, ", ")
}
