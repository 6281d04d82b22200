package render

import (
	"fmt"
	"html/template"
	"io"
	"sync"
	"time"

	"github.com/sluice-data/sluice/fanout/report"
)

// WriteHTML writes the report as one self-contained HTML page: the job,
// a table per phase, the timeline and throughput figure inline (SVG), the
// retried tasks, the stragglers and the lanes. It loads nothing from
// anywhere.
func WriteHTML(w io.Writer, rep *report.Report) error {
	fig, err := svg(rep)
	if err != nil {
		return err
	}
	var stragglers []report.Attempt
	for _, a := range rep.Attempts {
		if a.Straggler {
			stragglers = append(stragglers, a)
		}
	}
	outcome := "succeeded"
	switch {
	case rep.End.Time.IsZero():
		outcome = "unknown: the log stops before the job ended"
	case rep.End.Error != "":
		outcome = "failed: " + rep.End.Error
	}
	return page().Execute(w, map[string]any{
		"Rep": rep, "Figure": fig, "Stragglers": stragglers, "Outcome": outcome,
		"Wall": rep.Finish().Sub(rep.Start()).Round(time.Millisecond),
	})
}

// page is parsed on first use, not as every sluice process starts.
var page = sync.OnceValue(func() *template.Template {
	return template.Must(template.New("report").Funcs(template.FuncMap{
		"mib":  func(n int64) string { return fmt.Sprintf("%.1f", float64(n)/(1<<20)) },
		"secs": func(d time.Duration) string { return fmt.Sprintf("%.3f", d.Seconds()) },
		"rate": func(n int64, d time.Duration) string {
			if d <= 0 {
				return "-"
			}
			return fmt.Sprintf("%.1f", float64(n)/(1<<20)/d.Seconds())
		},
		"at": func(rep *report.Report, t time.Time) string {
			return fmt.Sprintf("%.3f", t.Sub(rep.Start()).Seconds())
		},
		"took": func(a report.Attempt) string { return fmt.Sprintf("%.3f", a.End.Sub(a.Start).Seconds()) },
	}).Parse(`<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<title>sluice job {{.Rep.Job.Job}}</title>
<style>
body { font-family: system-ui, sans-serif; margin: 1.5em; color: #222; }
table { border-collapse: collapse; margin: 0.5em 0 1.5em; }
th, td { border: 1px solid #ccc; padding: 0.25em 0.6em; text-align: right; }
th { background: #f3f3f3; }
td.text, th.text { text-align: left; }
code { background: #f6f6f6; padding: 0.1em 0.3em; }
.failed { color: #c00; }
figure { margin: 0; }
figure svg { max-width: 100%; height: auto; }
</style>
</head>
<body>
<h1>sluice job</h1>
<p id="job"><code>{{.Rep.Job.Job}}</code>: <code>{{.Rep.Job.Plan}}</code></p>
<p id="outcome">Started {{.Rep.Start.Format "2006-01-02 15:04:05.000 MST"}}, {{.Wall}} wall, {{.Rep.Job.Workers}} workers at once, {{len .Rep.Attempts}} attempts: <span {{if .Rep.End.Error}}class="failed"{{end}}>{{.Outcome}}</span>.</p>

<h2>Phases</h2>
<table id="phases">
<tr><th>phase</th><th class="text">kind</th><th>tasks</th><th>attempts</th><th>committed</th><th>failed</th><th>duplicates</th><th>stopped</th><th>stragglers</th><th>rows in</th><th>MiB in</th><th>rows out</th><th>MiB out</th><th>wall (s)</th><th>MiB/s in</th><th class="text">error</th></tr>
{{range .Rep.Phases}}<tr><td>{{.Index}}</td><td class="text">{{.Kind}}</td><td>{{.Tasks}}</td><td>{{.Attempts}}</td><td>{{.Committed}}</td><td>{{.Failed}}</td><td>{{.Duplicates}}</td><td>{{.Stopped}}</td><td>{{.Stragglers}}</td><td>{{.RowsIn}}</td><td>{{mib .BytesIn}}</td><td>{{.RowsOut}}</td><td>{{mib .BytesOut}}</td><td>{{secs .Wall}}</td><td>{{rate .BytesIn .Wall}}</td><td class="text failed">{{.Error}}</td></tr>
{{end}}</table>

<h2>Timeline</h2>
<figure id="timeline">{{.Figure}}</figure>

<h2>Retried tasks</h2>
{{if .Rep.Retried}}<table id="retried">
<tr><th>phase</th><th>task</th><th>attempts</th><th class="text">outcomes</th><th class="text">errors</th></tr>
{{range .Rep.Retried}}<tr><td>{{.Phase}}</td><td>{{.Task}}</td><td>{{.Attempts}}</td><td class="text">{{range $i, $o := .Outcomes}}{{if $i}}, {{end}}{{$o}}{{end}}</td><td class="text">{{range .Errors}}<div class="failed">{{.}}</div>{{end}}</td></tr>
{{end}}</table>{{else}}<p id="retried">Every task took one attempt.</p>{{end}}

<h2>Stragglers</h2>
{{if .Stragglers}}<table id="stragglers">
<tr><th>phase</th><th>task</th><th class="text">attempt</th><th class="text">worker</th><th>start (s)</th><th>took (s)</th><th class="text">outcome</th></tr>
{{range .Stragglers}}<tr><td>{{.Phase}}</td><td>{{.Task}}</td><td class="text">{{.Attempt}}</td><td class="text">{{.Worker}}</td><td>{{at $.Rep .Start}}</td><td>{{took .}}</td><td class="text">{{.Outcome}}</td></tr>
{{end}}</table>{{else}}<p id="stragglers">No attempt ran past twice its phase's median.</p>{{end}}

<h2>Workers</h2>
<p>A lane is a slot of a host: the attempts drawn on it ran there one after another.</p>
<table id="lanes">
<tr><th class="text">lane</th><th>attempts</th><th>tasks committed</th><th>busy (s)</th></tr>
{{range .Rep.Lanes}}<tr><td class="text">{{.Name}}</td><td>{{.Attempts}}</td><td>{{.Committed}}</td><td>{{secs .Busy}}</td></tr>
{{end}}</table>
</body>
</html>
`))
})
