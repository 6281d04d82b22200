package cli

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"image/png"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/sluice-data/sluice/fanout"
	"github.com/sluice-data/sluice/internal/testenv"
)

// chromium finds a headless-capable Chromium: SLUICE_TEST_CHROMIUM, else
// Debian's chromium on the PATH (scripts/test installs it as root).
func chromium(t *testing.T) string {
	t.Helper()
	if p := os.Getenv("SLUICE_TEST_CHROMIUM"); p != "" {
		return p
	}
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	testenv.Unavailable(t, "no Chromium (set SLUICE_TEST_CHROMIUM or install Debian's chromium)")
	return ""
}

// A real 64-task shuffle job with a task that fails once, its event log
// drawn by sluice report and opened in headless Chromium: the page loads
// without a console error, and its tables say what the log says (each
// lane's tasks, the retried task).
func TestReportInChromium(t *testing.T) {
	chrome := chromium(t)
	dir := t.TempDir()
	taxi := filepath.Join(dir, "taxi")
	if r := sluice(t, nil, "gen", "taxi", "--rows", "64000", "--files", "64", "-q", "--out", taxi); r.code != 0 {
		t.Fatalf("gen: %s", r.stderr)
	}
	events := filepath.Join(dir, "events.jsonl")
	r := sluice(t, nil, "run", "--workers", "4", "--events", events, "--x-worker-env", "SLUICE_X_FAIL=0/5",
		"scan "+taxi+"/ | shuffle --by payment_type --to 4 | count-by payment_type | to-csv")
	if r.code != 0 {
		t.Fatalf("run: exit %d: %s", r.code, r.stderr)
	}
	html, pngFile := filepath.Join(dir, "job.html"), filepath.Join(dir, "job.png")
	for _, out := range []string{html, pngFile} {
		if r := sluice(t, nil, "report", events, "-o", out); r.code != 0 || r.stderr != "" {
			t.Fatalf("report -o %s: exit %d: %s", out, r.code, r.stderr)
		}
	}

	// What the log says, read here on its own.
	f, err := os.Open(events)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var attempts []fanout.Event
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		var ev fanout.Event
		if err := json.Unmarshal(sc.Bytes(), &ev); err != nil {
			t.Fatal(err)
		}
		if ev.Type == fanout.EventAttempt {
			attempts = append(attempts, ev)
		}
	}
	var mapAttempts, committed int
	var failedErr string
	for _, a := range attempts {
		if a.Phase == 0 {
			mapAttempts++
		}
		if a.Outcome == fanout.OutcomeCommitted {
			committed++
		}
		if a.Phase == 0 && a.Task == 5 && a.Outcome == fanout.OutcomeFailed {
			failedErr = a.Error
		}
	}
	if committed != 68 || failedErr == "" {
		t.Fatalf("the log has %d committed attempts (want 64 map + 4 reduce) and map task 5's failure %q", committed, failedErr)
	}

	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	actx, cancelAlloc := chromedp.NewExecAllocator(ctx, append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(chrome), chromedp.NoSandbox, chromedp.WindowSize(1400, 1000))...)
	defer cancelAlloc()
	bctx, cancelBrowser := chromedp.NewContext(actx)
	defer cancelBrowser()
	// Every console message of the page, from its load to a last line
	// the test writes: errors and uncaught exceptions must be none.
	messages := chromedp.Console(bctx)
	if err := chromedp.Do(bctx, chromedp.Navigate("file://"+html), chromedp.WaitVisible(chromedp.ID("lanes"))); err != nil {
		t.Fatal(err)
	}
	shot, err := chromedp.Run(bctx, chromedp.FullScreenshot(100))
	if err != nil {
		t.Fatal(err)
	}
	retried, err := chromedp.Run(bctx, chromedp.Text(chromedp.ID("retried")))
	if err != nil {
		t.Fatal(err)
	}
	phases, err := chromedp.Run(bctx, chromedp.Text(chromedp.ID("phases")))
	if err != nil {
		t.Fatal(err)
	}
	lanes, err := chromedp.Run(bctx, chromedp.Evaluate[[][]string](`[...document.querySelectorAll("#lanes tr")].slice(1).map(r => [...r.cells].map(c => c.textContent))`))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := chromedp.Run(bctx, chromedp.Evaluate[any](`console.log("sluice-report-checked")`)); err != nil {
		t.Fatal(err)
	}
	var consoleErrs []string
	for m, err := range messages {
		if err != nil {
			t.Fatal(err)
		}
		if m.Text == "sluice-report-checked" {
			break
		}
		if m.Type == chromedp.ConsoleError || m.IsException() {
			consoleErrs = append(consoleErrs, m.String())
		}
	}
	if len(consoleErrs) > 0 {
		t.Errorf("console errors: %q", consoleErrs)
	}
	if img, err := png.Decode(bytes.NewReader(shot)); err != nil {
		t.Errorf("screenshot: %v", err)
	} else if b := img.Bounds(); b.Dx() < 1000 || b.Dy() < 1000 {
		t.Errorf("screenshot of %v: the page is smaller than its window", b)
	}
	if dir := os.Getenv("SLUICE_TEST_ARTIFACTS"); dir != "" {
		for name, b := range map[string][]byte{"report-screenshot.png": shot} {
			_ = os.WriteFile(filepath.Join(dir, name), b, 0o644)
		}
		_ = exec.Command("cp", html, pngFile, events, dir).Run()
	}
	// The retried task: map task 5, failed then committed, with its error.
	if !strings.Contains(retried, "failed, committed") || !strings.Contains(retried, failedErr) || !strings.Contains(retried, "injected failure") {
		t.Errorf("the retried table does not show map task 5:\n%s", retried)
	}
	// One host, four workers at once: at most four lanes, which between
	// them ran every attempt and committed every task.
	sumAttempts, sumCommitted := 0, 0
	for _, row := range lanes {
		a, err1 := strconv.Atoi(row[1])
		c, err2 := strconv.Atoi(row[2])
		if err1 != nil || err2 != nil {
			t.Fatalf("lane row %q", row)
		}
		sumAttempts += a
		sumCommitted += c
	}
	if len(lanes) < 1 || len(lanes) > 4 || sumAttempts != len(attempts) || sumCommitted != 68 {
		t.Errorf("%d lanes with %d attempts and %d tasks committed; the log has %d attempts, 68 committed, 4 at once", len(lanes), sumAttempts, sumCommitted, len(attempts))
	}
	for _, want := range []string{"map\t64\t" + strconv.Itoa(mapAttempts) + "\t64\t", "reduce\t4\t"} {
		if !strings.Contains(phases, want) {
			t.Errorf("the phases table lacks %q:\n%s", want, phases)
		}
	}
	b, err := os.ReadFile(pngFile)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := png.Decode(bytes.NewReader(b)); err != nil {
		t.Errorf("report -o job.png: %v", err)
	}
}

// Bad input to report: one line, a non-zero exit, nothing written.
func TestReportBadInput(t *testing.T) {
	dir := t.TempDir()
	bad := filepath.Join(dir, "bad.jsonl")
	if err := os.WriteFile(bad, []byte(`{"type":"job","time":"2026-12-06T10:00:00Z","version":9}`+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(dir, "job.html")
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"report", bad, "-o", out}, "line 1: event log version 9: this sluice reads version 1"},
		{[]string{"report", filepath.Join(dir, "missing.jsonl"), "-o", out}, "no such file"},
		{[]string{"report", bad, "-o", filepath.Join(dir, "job.pdf")}, "want a .html or .png file"},
		{[]string{"report", bad}, "-o"},
	} {
		r := sluice(t, nil, c.args...)
		if r.code == 0 || !strings.Contains(r.stderr, c.want) || strings.Count(strings.TrimSpace(r.stderr), "\n") > 0 && !strings.Contains(r.stderr, "Usage") {
			t.Errorf("%q: exit %d, stderr %q; want a line with %q", c.args, r.code, r.stderr, c.want)
		}
	}
	if _, err := os.Stat(out); !os.IsNotExist(err) {
		t.Errorf("a failed report left %s", out)
	}
	if left, _ := filepath.Glob(filepath.Join(dir, ".job*")); len(left) > 0 {
		t.Errorf("temporary files left: %q", left)
	}
}
