package render

import (
	"bytes"
	"image/png"
	"os"
	"strings"
	"testing"

	"github.com/sluice-data/sluice/fanout/report"
)

// jobLog is report's test job (a map phase of 3 tasks, one failing once
// and one straggling with a stopped duplicate, and a reduce phase of 1),
// as sluice run --workers --events writes it.
func jobLog(t testing.TB) []byte {
	t.Helper()
	b, err := os.ReadFile("testdata/job.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestWrite(t *testing.T) {
	rep, err := report.Read(bytes.NewReader(jobLog(t)))
	if err != nil {
		t.Fatal(err)
	}
	var b bytes.Buffer
	if err := WritePNG(&b, rep); err != nil {
		t.Fatal(err)
	}
	img, err := png.Decode(&b)
	if err != nil {
		t.Fatal(err)
	}
	if w := img.Bounds().Dx(); w < 500 {
		t.Errorf("PNG %d pixels wide", w)
	}
	b.Reset()
	if err := WriteHTML(&b, rep); err != nil {
		t.Fatal(err)
	}
	page := b.String()
	for _, want := range []string{"<svg", "<td>0</td><td>1</td><td>2</td><td class=\"text\">failed, committed</td>", "boom", "a #2</td><td>2</td><td>1</td>", "failed: ", "succeeded"} {
		if want == "failed: " {
			if strings.Contains(page, want) {
				t.Errorf("the page of a job that succeeded says %q", want)
			}
			continue
		}
		if !strings.Contains(page, want) {
			t.Errorf("the page lacks %q", want)
		}
	}
	// Self-contained: nothing fetched from elsewhere.
	for _, ref := range []string{"src=", "href=", "@import", "url("} {
		if strings.Contains(page, ref) {
			t.Errorf("the page refers to something outside it: %q", ref)
		}
	}
}

// Whatever reads must also draw, as a page and as an image.
func FuzzDraw(f *testing.F) {
	lines := strings.Split(strings.TrimSpace(string(jobLog(f))), "\n")
	f.Add(strings.Join(lines, "\n"))
	f.Add(strings.Join(lines[:4], "\n"))
	f.Add(lines[0] + "\n" + `{"type":"attempt","time":"2026-12-06T10:00:00Z","phase":1,"task":0,"start":"2026-12-06T10:00:00Z","end":"2026-12-06T09:00:00Z","outcome":"failed"}`)
	f.Fuzz(func(t *testing.T, s string) {
		rep, err := report.Read(strings.NewReader(s))
		if err != nil {
			return
		}
		var b bytes.Buffer
		if err := WriteHTML(&b, rep); err != nil {
			t.Fatalf("read, but does not draw: %v", err)
		}
		if err := WritePNG(&b, rep); err != nil {
			t.Fatalf("read, but does not draw: %v", err)
		}
	})
}
