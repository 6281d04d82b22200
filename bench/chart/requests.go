// Package chart draws what sluice bench measured as PNG images: its
// Charts is bench.Output's. A package of its own because the plotting
// library takes milliseconds to initialise in every process that links
// it.
package chart

import (
	"image/color"
	"io"
	"math"
	"time"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgimg"

	"github.com/sluice-data/sluice/bench"
)

// Charts draws a bench run's records (bench.Charts).
type Charts struct{}

// Requests is the package's Requests.
func (Charts) Requests(w io.Writer, recs []bench.Record) error { return Requests(w, recs) }

// Timeline is the package's Timeline.
func (Charts) Timeline(w io.Writer, recs []bench.Record) error { return Timeline(w, recs) }

const mib = 1 << 20

// kindColors keep put and get apart in every panel.
var kindColors = map[bench.Kind]color.NRGBA{
	bench.Put: {R: 31, G: 119, B: 180, A: 255}, // blue
	bench.Get: {R: 255, G: 127, B: 14, A: 255}, // orange
}

// Requests draws successful requests of recs as a PNG of three panels:
// the per-request MiB/s histogram, each request's duration against when
// it started, and the aggregate MiB/s over time; puts and gets in their
// own colours.
func Requests(w io.Writer, recs []bench.Record) error {
	byKind := map[bench.Kind][]bench.Record{}
	var end time.Duration
	var top float64
	for _, r := range recs {
		if !r.OK() {
			continue
		}
		byKind[r.Kind] = append(byKind[r.Kind], r)
		end = max(end, r.LastByte)
		if d := (r.LastByte - r.Start).Seconds(); d > 0 {
			top = max(top, float64(r.Bytes)/mib/d)
		}
	}
	kinds := []bench.Kind{}
	for _, k := range []bench.Kind{bench.Put, bench.Get} {
		if len(byKind[k]) > 0 {
			kinds = append(kinds, k)
		}
	}

	hist := newPlot("Per-request throughput", "MiB/s (bytes / issue-to-last-byte)", "requests")
	durations := newPlot("Request durations", "request start (s)", "issue to last byte (ms)")
	overTime := newPlot("Aggregate throughput over time", "time (s)", "MiB/s")
	const bins = 40
	width := math.Max(top, 1e-9) * 1.0001 / bins
	for _, k := range kinds {
		rs := byKind[k]
		fill := kindColors[k]
		fill.A = 140 // see-through, so overlapping put and get bars both show

		h := &plotter.Histogram{Bins: make([]plotter.HistogramBin, bins), Width: width, FillColor: fill}
		h.LineStyle.Width = vg.Points(0.5)
		h.LineStyle.Color = kindColors[k]
		for i := range h.Bins {
			h.Bins[i].Min, h.Bins[i].Max = float64(i)*width, float64(i+1)*width
		}
		pts := make(plotter.XYs, 0, len(rs))
		for _, r := range rs {
			d := (r.LastByte - r.Start).Seconds()
			if d > 0 {
				h.Bins[min(int(float64(r.Bytes)/mib/d/width), bins-1)].Weight++
			}
			pts = append(pts, plotter.XY{X: r.Start.Seconds(), Y: d * 1000})
		}
		hist.Add(h)
		hist.Legend.Add(string(k), h)

		sc, err := plotter.NewScatter(pts)
		if err != nil {
			return err
		}
		sc.GlyphStyle.Color = kindColors[k]
		sc.GlyphStyle.Radius = vg.Points(1.5)
		sc.GlyphStyle.Shape = draw.CircleGlyph{}
		durations.Add(sc)
		durations.Legend.Add(string(k), sc)

		const steps = 200
		rates := bench.Timeline(rs, bench.Span{End: end}, steps)
		line := make(plotter.XYs, steps)
		for i, v := range rates {
			line[i] = plotter.XY{X: (end.Seconds() / steps) * (float64(i) + 0.5), Y: v}
		}
		l, err := plotter.NewLine(line)
		if err != nil {
			return err
		}
		l.LineStyle.Color = kindColors[k]
		l.LineStyle.Width = vg.Points(1.5)
		overTime.Add(l)
		overTime.Legend.Add(string(k), l)
	}

	// Headroom above the data keeps the legends off it.
	for _, p := range []*plot.Plot{hist, durations, overTime} {
		p.Y.Max = niceCeil(p.Y.Max * 1.25)
	}
	return writeColumn(w, 8*vg.Inch, 10*vg.Inch, hist, durations, overTime)
}

// writeColumn draws panels one above the other, their axes aligned, as a
// PNG of width x height.
func writeColumn(w io.Writer, width, height vg.Length, panels ...*plot.Plot) error {
	img := vgimg.New(width, height)
	plots := make([][]*plot.Plot, len(panels))
	for i, p := range panels {
		plots[i] = []*plot.Plot{p}
	}
	tiles := draw.Tiles{Rows: len(panels), Cols: 1, PadY: 6 * vg.Millimeter,
		PadTop: 3 * vg.Millimeter, PadBottom: 3 * vg.Millimeter, PadLeft: 3 * vg.Millimeter, PadRight: 5 * vg.Millimeter}
	canvases := plot.Align(plots, tiles, draw.New(img))
	for i, p := range panels {
		p.Draw(canvases[i][0])
	}
	_, err := vgimg.PngCanvas{Canvas: img}.WriteTo(w)
	return err
}

func newPlot(title, x, y string) *plot.Plot {
	p := plot.New()
	p.Title.Text = title
	p.X.Label.Text = x
	p.Y.Label.Text = y
	p.X.Min, p.Y.Min = 0, 0
	p.Legend.Top = true
	p.Add(plotter.NewGrid())
	return p
}

// niceCeil rounds x up to 1, 2 or 5 times a power of ten, so the top tick
// of an axis reads as a round number.
func niceCeil(x float64) float64 {
	if x <= 0 {
		return 1
	}
	p := math.Pow(10, math.Floor(math.Log10(x)))
	for _, m := range []float64{1, 2, 5, 10} {
		if m*p >= x {
			return m * p
		}
	}
	return 10 * p
}
