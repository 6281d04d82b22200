package exec

import (
	"bytes"
	"strings"
	"testing"
)

// FuzzStderrTail: a program's standard error is outside bytes; passed on,
// every line gets its prefix and nothing is lost, and the tail a failure
// quotes stays a few short lines on one line.
func FuzzStderrTail(f *testing.F) {
	f.Add([]byte("one\ntwo\r\n\nthree"))
	f.Add(bytes.Repeat([]byte("x"), 200<<10))
	f.Add([]byte("\x00\xff\n\n\n"))
	f.Fuzz(func(t *testing.T, b []byte) {
		var out bytes.Buffer
		tail := &stderrTail{}
		tail.pump(bytes.NewReader(b), &out, "[exec p] ")
		text := tail.text()
		if strings.Contains(text, "\n") || len(text) > tailLines*(tailWidth+10)+20 {
			t.Fatalf("tail %q", text)
		}
		for _, line := range strings.SplitAfter(out.String(), "\n") {
			if line != "" && !strings.HasPrefix(line, "[exec p] ") {
				t.Fatalf("line without its prefix: %q", line)
			}
		}
		if want := strings.Count(string(b), "\n"); strings.Count(out.String(), "\n") < want {
			t.Fatalf("%d lines passed on, %d written", strings.Count(out.String(), "\n"), want)
		}
	})
}
