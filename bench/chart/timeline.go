package chart

import (
	"cmp"
	"fmt"
	"image/color"
	"io"
	"math"
	"slices"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotutil"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"

	"github.com/sluice-data/sluice/bench"
)

// Timeline draws every request attempt of recs as a PNG, PyWren's
// figure: one horizontal line per request from issue to last byte, time on
// x, requests in the order issued on y, coloured by the worker process
// that made it, gets dashed (failed attempts black). Each cell (one run of a
// fanned-out sweep) gets a panel of its own.
func Timeline(w io.Writer, recs []bench.Record) error {
	byCell := map[int][]bench.Record{}
	var cells []int
	for _, r := range recs {
		if _, ok := byCell[r.Cell]; !ok {
			cells = append(cells, r.Cell)
		}
		byCell[r.Cell] = append(byCell[r.Cell], r)
	}
	if len(cells) == 0 {
		return fmt.Errorf("timeline: no requests to draw")
	}
	slices.Sort(cells)
	panels := make([]*plot.Plot, len(cells))
	for i, c := range cells {
		panels[i] = timelinePanel(byCell[c])
	}
	return writeColumn(w, 9*vg.Inch, vg.Length(len(cells))*3.5*vg.Inch, panels...)
}

func timelinePanel(recs []bench.Record) *plot.Plot {
	recs = slices.Clone(recs)
	slices.SortStableFunc(recs, func(a, b bench.Record) int { return cmp.Compare(a.Start, b.Start) })
	procs := 1
	for _, r := range recs {
		procs = max(procs, r.Processes, r.Process+1)
	}
	width := vg.Points(math.Max(0.3, math.Min(2, 300/float64(len(recs)))))
	dashes := []vg.Length{3 * width, 1.5 * width}
	puts, gets := make([]*segments, procs), make([]*segments, procs)
	for i := range puts {
		puts[i] = &segments{style: draw.LineStyle{Color: plotutil.Color(i), Width: width}}
		gets[i] = &segments{style: draw.LineStyle{Color: plotutil.Color(i), Width: width, Dashes: dashes}}
	}
	failed := &segments{style: draw.LineStyle{Color: color.Black, Width: width}}
	first := math.Inf(1)
	for i, r := range recs {
		s := seg{r.Start.Seconds(), r.LastByte.Seconds(), float64(i)}
		first = math.Min(first, s.x0)
		switch {
		case !r.OK():
			failed.segs = append(failed.segs, s)
		case r.Kind == bench.Get:
			gets[r.Process].segs = append(gets[r.Process].segs, s)
		default:
			puts[r.Process].segs = append(puts[r.Process].segs, s)
		}
	}
	p := plot.New()
	p.X.Label.Text = "time (s)"
	p.Y.Label.Text = "request, in the order issued"
	p.Title.Text = fmt.Sprintf("%d worker process(es), %d requests, issue to last byte: puts solid, gets dashed", procs, len(recs))
	p.Y.Min = 0
	p.Legend.Top = true
	p.Legend.Left = true
	for i := range puts {
		for _, l := range []*segments{puts[i], gets[i]} {
			if len(l.segs) > 0 {
				p.Add(l)
			}
		}
		if procs <= 16 {
			p.Legend.Add(fmt.Sprintf("worker %d", i), puts[i])
		}
	}
	if len(failed.segs) > 0 {
		p.Add(failed)
		p.Legend.Add("failed attempt", failed)
	}
	// Headroom above the lines keeps the legend off them.
	p.Y.Max = math.Max(p.Y.Max, float64(len(recs)))*1.15 + 1
	// Runs of a sweep start late in it: each panel from its first request.
	p.X.Min = math.Floor(first*10) / 10
	return p
}

type seg struct{ x0, x1, y float64 }

// segments is a gonum plotter of horizontal lines in one style.
type segments struct {
	segs  []seg
	style draw.LineStyle
}

func (s *segments) Plot(c draw.Canvas, p *plot.Plot) {
	trX, trY := p.Transforms(&c)
	for _, sg := range s.segs {
		c.StrokeLine2(s.style, trX(sg.x0), trY(sg.y), trX(sg.x1), trY(sg.y))
	}
}

func (s *segments) DataRange() (xmin, xmax, ymin, ymax float64) {
	xmin, ymin = math.Inf(1), math.Inf(1)
	xmax, ymax = math.Inf(-1), math.Inf(-1)
	for _, sg := range s.segs {
		xmin, xmax = math.Min(xmin, sg.x0), math.Max(xmax, sg.x1)
		ymin, ymax = math.Min(ymin, sg.y), math.Max(ymax, sg.y)
	}
	return xmin, xmax, ymin, ymax
}

func (s *segments) Thumbnail(c *draw.Canvas) {
	y := c.Center().Y
	sty := s.style
	sty.Width = vg.Points(2)
	c.StrokeLine2(sty, c.Min.X, y, c.Max.X, y)
}
