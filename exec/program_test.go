package exec

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/sluice-data/sluice/format"
)

// manyRows is a source of n rows of kvSchema in batches of 1000: more
// than a pipe holds, so a program that reads all before writing (or
// nothing) would deadlock a run that did not write and read at once.
func manyRows(t *testing.T, mem memory.Allocator, n int) SourceStage {
	t.Helper()
	var recs []arrow.RecordBatch
	for lo := 0; lo < n; lo += 1000 {
		b := array.NewRecordBuilder(mem, kvSchema)
		for i := lo; i < min(lo+1000, n); i++ {
			b.Field(0).(*array.StringBuilder).Append("k" + strconv.Itoa(i%7))
			b.Field(1).(*array.Int64Builder).Append(int64(i))
			b.Field(2).(*array.Float64Builder).Append(float64(i) / 4)
		}
		recs = append(recs, b.NewRecordBatch())
		b.Release()
	}
	t.Cleanup(func() { releaseAll(recs) }) // before the allocator's check
	return FromBatches(kvSchema, recs...)
}

// lines passes a program's stderr on to the test's log, and tells who
// waits for a line that it came.
type lines struct {
	t    *testing.T
	mu   sync.Mutex
	all  []string
	want string
	seen chan struct{}
}

func newLines(t *testing.T, want string) *lines {
	return &lines{t: t, want: want, seen: make(chan struct{})}
}

func (l *lines) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.all = append(l.all, string(p))
	if l.want != "" && strings.Contains(string(p), l.want) {
		l.want = ""
		close(l.seen)
	}
	return len(p), nil
}

func (l *lines) text() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return strings.Join(l.all, "")
}

func program(stderr *lines, in, out format.Format, argv ...string) Stage {
	return Program(ProgramOptions{Argv: argv, In: in, Out: out, Stderr: stderr})
}

func runRows(ctx context.Context, mem memory.Allocator, src SourceStage, stages ...Stage) ([]string, error) {
	var rows []string
	err := Run(ctx, Pipeline{Source: src, Stages: append(stages, Collect(nil, func(rec arrow.RecordBatch) error {
		rows = append(rows, rowText(rec, " ")...)
		return nil
	}))}, Options{Open: testOpen, Mem: mem, Workers: 2})
	return rows, err
}

func TestExecRoundTripsEveryFormat(t *testing.T) {
	mem := checkedMem(t)
	want, err := runRows(context.Background(), mem, manyRows(t, mem, 5000))
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range []format.Format{format.IPCStream, format.CSV, format.JSONLines} {
		t.Run(f.String(), func(t *testing.T) {
			got, err := runRows(context.Background(), mem, manyRows(t, mem, 5000), program(newLines(t, ""), f, f, "cat"))
			if err != nil {
				t.Fatal(err)
			}
			if strings.Join(got, "\n") != strings.Join(want, "\n") {
				t.Fatalf("cat over %s: %d rows, want %d; first %q", f, len(got), len(want), got[:min(3, len(got))])
			}
		})
	}
}

func TestExecReadsAllThenWritesWithoutDeadlock(t *testing.T) {
	mem := checkedMem(t)
	// tac holds its whole input before writing a byte.
	got, err := runRows(context.Background(), mem, manyRows(t, mem, 100000),
		program(newLines(t, ""), format.CSV, format.CSV, "sh", "-c", "read h; echo \"$h\"; tac"))
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 100000 || got[0] != "k4 99999 24999.75" {
		t.Fatalf("%d rows, first %q", len(got), got[:1])
	}
}

func TestExecProgramThatStopsEarlyEndsCleanly(t *testing.T) {
	mem := checkedMem(t)
	got, err := runRows(context.Background(), mem, manyRows(t, mem, 100000),
		program(newLines(t, ""), format.CSV, format.CSV, "head", "-n", "4"))
	if err != nil {
		t.Fatal(err)
	}
	if strings.Join(got, ",") != "k0 0 0,k1 1 0.25,k2 2 0.5" {
		t.Fatalf("got %q", got)
	}
}

func TestExecStagesAfterThatStopEarlyEndTheProgram(t *testing.T) {
	mem := checkedMem(t)
	// The program would run for ever; head wants 3 rows.
	got, err := runRows(context.Background(), mem, manyRows(t, mem, 10),
		program(newLines(t, ""), format.CSV, format.CSV, "sh", "-c", "echo k,n; while :; do echo a,1; done"), Head(3))
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 3 {
		t.Fatalf("got %q", got)
	}
}

func TestExecFailuresAreOneLine(t *testing.T) {
	for _, c := range []struct {
		name string
		argv []string
		out  format.Format
		want string
	}{
		{"exit 3", []string{"sh", "-c", "cat >/dev/null; echo first >&2; echo bad thing >&2; exit 3"}, format.IPCStream, "exec sh: exit status 3; stderr: first | bad thing"},
		{"garbage", []string{"sh", "-c", "echo not arrow; cat >/dev/null"}, format.IPCStream, "exec sh: output: not an Arrow IPC stream"},
		{"reads nothing writes much", []string{"yes"}, format.IPCStream, "exec yes: output: not an Arrow IPC stream"},
		{"cut stream", []string{"head", "-c", "1000"}, format.IPCStream, "exec head: output: "},
		{"nothing written", []string{"true"}, format.IPCStream, "exec true: output: empty: expected an Arrow IPC stream"},
		{"signal", []string{"sh", "-c", "kill -SEGV $$"}, format.IPCStream, "exec sh: signal: segmentation fault"},
		{"bad csv", []string{"sh", "-c", "cat >/dev/null; printf 'a,b\\n1\\n'"}, format.CSV, "exec sh: output: "},
		{"missing", []string{"sluice-no-such-program"}, format.IPCStream, `exec sluice-no-such-program: program "sluice-no-such-program" not found`},
	} {
		t.Run(c.name, func(t *testing.T) {
			mem := checkedMem(t)
			_, err := runRows(context.Background(), mem, manyRows(t, mem, 20000), program(newLines(t, ""), format.IPCStream, c.out, c.argv...))
			if err == nil || !strings.HasPrefix(err.Error(), c.want) || strings.Contains(err.Error(), "\n") {
				t.Fatalf("err %v, want one line starting %q", err, c.want)
			}
		})
	}
}

func TestExecNoEndMarkerIsAFailure(t *testing.T) {
	mem := checkedMem(t)
	// A program that exits 0 after a whole batch but without the stream's
	// end: a crash would look like this.
	var stream bytes.Buffer
	rec := batch(t, mem, kvSchema, []any{"a", 1, 1.5})
	defer rec.Release()
	sw := newStreamWriter(&stream, kvSchema, streamOptions{Mem: mem})
	if err := sw.Write(rec); err != nil {
		t.Fatal(err)
	}
	sw.Abort()
	file := filepath.Join(t.TempDir(), "cut.arrows")
	if err := os.WriteFile(file, stream.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	_, err := runRows(context.Background(), mem, manyRows(t, mem, 10), program(newLines(t, ""), format.IPCStream, format.IPCStream, "cat", file))
	if err == nil || !strings.Contains(err.Error(), "exec cat: output: Arrow IPC stream ended without its end-of-stream marker") {
		t.Fatalf("err %v", err)
	}
}

func TestExecTimeoutKills(t *testing.T) {
	mem := checkedMem(t)
	_, err := runRows(context.Background(), mem, manyRows(t, mem, 10),
		Program(ProgramOptions{Argv: []string{"sleep", "600"}, Timeout: 50 * time.Millisecond, Stderr: newLines(t, "")}))
	if err == nil || err.Error() != "exec sleep: killed: it ran past --timeout 50ms (nothing on stderr)" {
		t.Fatalf("err %v", err)
	}
}

func TestExecStderrIsPassedOnWithAPrefix(t *testing.T) {
	mem := checkedMem(t)
	l := newLines(t, "")
	if _, err := runRows(context.Background(), mem, manyRows(t, mem, 10), program(l, format.IPCStream, format.IPCStream, "sh", "-c", "echo hello >&2; cat")); err != nil {
		t.Fatal(err)
	}
	if l.text() != "[exec sh] hello\n" {
		t.Fatalf("stderr %q", l.text())
	}
}

func TestExecSchemaIsChecked(t *testing.T) {
	mem := checkedMem(t)
	want, _ := ColumnsSchema([]string{"k", "n"}, []string{"string", "int64"})
	_, err := runRows(context.Background(), mem, manyRows(t, mem, 10),
		Program(ProgramOptions{Argv: []string{"cat"}, Schema: want, Stderr: newLines(t, "")}))
	if err == nil || !strings.Contains(err.Error(), "not those of --schema (k utf8, n int64)") {
		t.Fatalf("err %v", err)
	}
	// CSV is read with its types.
	want, _ = ColumnsSchema([]string{"k", "n", "x"}, []string{"string", "float64", "string"})
	got, err := runRows(context.Background(), mem, manyRows(t, mem, 2),
		Program(ProgramOptions{Argv: []string{"cat"}, In: format.CSV, Out: format.CSV, Schema: want, Stderr: newLines(t, "")}),
		selectExprs(Computed{Name: "y", Expr: "n / 2"}))
	if err != nil || strings.Join(got, ",") != "0,0.5" {
		t.Fatalf("%q %v", got, err)
	}
}

func TestExecProgramsInARow(t *testing.T) {
	mem := checkedMem(t)
	got, err := runRows(context.Background(), mem, manyRows(t, mem, 3000),
		program(newLines(t, ""), format.JSONLines, format.CSV, "sh", "-c", "echo n; grep -o '\"n\":[0-9]*' | cut -d: -f2"),
		mustStage(t)(Filter("n % 1000 = 0")),
		program(newLines(t, ""), format.IPCStream, format.IPCStream, "cat"))
	if err != nil || strings.Join(got, ",") != "0,1000,2000" {
		t.Fatalf("%q %v", got, err)
	}
}
