package format

import (
	"bytes"
	"encoding/binary"
	"unicode/utf8"
)

// SniffBytes is how many leading bytes Sniff wants to see.
const SniffBytes = 4 << 10

// Sniff tells an input's format from its first bytes (up to SniffBytes):
// Parquet and the Arrow IPC file by their magic, an Arrow IPC stream by
// its first message's continuation marker; text is JSON lines or CSV, as
// name's suffix says (.jsonl, .ndjson; .csv) or else as its first
// character does ('{': JSON lines). Unknown for binary bytes that are
// none of these, and for no bytes at all.
func Sniff(head []byte, name string) Format {
	switch {
	case len(head) == 0:
		return Unknown
	case bytes.HasPrefix(head, []byte("PAR1")):
		return Parquet
	case bytes.HasPrefix(head, []byte("ARROW1")):
		return IPCFile
	case len(head) >= 8 && binary.LittleEndian.Uint32(head) == 0xFFFFFFFF:
		return IPCStream
	case !isText(head):
		return Unknown
	}
	if f, err := Of(name); err == nil && (f == CSV || f == JSONLines) {
		return f
	}
	if t := bytes.TrimLeft(head, " \t\r\n\ufeff"); len(t) > 0 && t[0] == '{' {
		return JSONLines
	}
	return CSV
}

// isText says whether b looks like text: UTF-8 (a rune cut at the end
// allowed) without NUL or other control bytes than tab and line ends.
func isText(b []byte) bool {
	for len(b) > 0 {
		r, n := utf8.DecodeRune(b)
		if r == utf8.RuneError && n <= 1 {
			return len(b) < utf8.UTFMax && !utf8.FullRune(b)
		}
		if r < 0x20 && r != '\t' && r != '\n' && r != '\r' {
			return false
		}
		b = b[n:]
	}
	return true
}
