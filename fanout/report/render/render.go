// Package render draws a job's report (package report) as one
// self-contained HTML page or a PNG. A package of its own because the
// plotting library takes milliseconds to initialise in every process that
// links it: sluice's stage processes do not, sluice-full does.
package render

import (
	"bytes"
	"fmt"
	"html/template"
	"image/color"
	"io"
	"math"
	"strings"
	"time"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/plotutil"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgimg"
	"gonum.org/v1/plot/vg/vgsvg"

	"github.com/sluice-data/sluice/fanout"

	"github.com/sluice-data/sluice/fanout/report"
)

// The figure's size: a lane takes a fixed height, within bounds.
func size(rep *report.Report) (w, h vg.Length) {
	lanes := float64(len(rep.Lanes))
	return 10 * vg.Inch, vg.Length(math.Min(20, math.Max(3, 1.5+0.18*lanes)))*vg.Inch + 3*vg.Inch
}

// panels are the timeline and the throughput below it.
func panels(rep *report.Report) ([]*plot.Plot, error) {
	t, err := timeline(rep)
	if err != nil {
		return nil, err
	}
	tp, err := throughput(rep)
	if err != nil {
		return nil, err
	}
	// Both over the job's whole span, so their times line up.
	span := rep.Finish().Sub(rep.Start()).Seconds()
	for _, p := range []*plot.Plot{t, tp} {
		p.X.Min, p.X.Max = 0, math.Max(span, 0.001)
	}
	return []*plot.Plot{t, tp}, nil
}

// draw draws the panels on c, the timeline taking the most height.
func drawReport(rep *report.Report, c draw.Canvas) error {
	panels, err := panels(rep)
	if err != nil {
		return err
	}
	_, h := size(rep)
	tpH := 2.6 * vg.Inch
	top := draw.Crop(c, 0, 0, tpH, 0)
	bottom := draw.Crop(c, 0, 0, 0, -(h - tpH))
	panels[0].Draw(top)
	panels[1].Draw(bottom)
	return nil
}

// WritePNG draws the report's timeline and throughput as a PNG.
func WritePNG(w io.Writer, rep *report.Report) error {
	width, h := size(rep)
	img := vgimg.New(width, h)
	if err := drawReport(rep, draw.New(img)); err != nil {
		return err
	}
	_, err := vgimg.PngCanvas{Canvas: img}.WriteTo(w)
	return err
}

// svg is the same figure as an SVG element, to put inline in a page.
func svg(rep *report.Report) (template.HTML, error) {
	width, h := size(rep)
	c := vgsvg.New(width, h)
	if err := drawReport(rep, draw.New(c)); err != nil {
		return "", err
	}
	var b bytes.Buffer
	if _, err := c.WriteTo(&b); err != nil {
		return "", err
	}
	s := b.String()
	// The XML prolog has no place inside an HTML page.
	if i := strings.Index(s, "<svg"); i > 0 {
		s = s[i:]
	}
	return template.HTML(s), nil
}

// phaseColor is phase i's colour in the timeline.
func phaseColor(i int) color.Color { return plotutil.Color(i) }

var (
	failedColor    = color.RGBA{R: 200, A: 255}
	stragglerColor = color.RGBA{R: 240, G: 140, A: 255}
)

func timeline(rep *report.Report) (*plot.Plot, error) {
	p := plot.New()
	p.Title.Text = fmt.Sprintf("%d attempts of %d tasks on %d lanes: failed outlined red, duplicates and stopped attempts pale, stragglers marked ▲",
		len(rep.Attempts), tasks(rep), len(rep.Lanes))
	p.X.Label.Text = "time since the job started (s)"
	p.Y.Label.Text = "lane (host #slot)"
	p.Legend.Top, p.Legend.Left = true, false
	byPhase := make([]*bars, len(rep.Phases))
	for i, ph := range rep.Phases {
		byPhase[i] = &bars{fill: phaseColor(i)}
		p.Legend.Add(fmt.Sprintf("phase %d (%s)", i, ph.Kind), byPhase[i])
	}
	var stragglers plotter.XYs
	t0 := rep.Start()
	for _, a := range rep.Attempts {
		b := bar{x0: a.Start.Sub(t0).Seconds(), x1: a.End.Sub(t0).Seconds(), y: float64(a.Lane),
			pale: a.Outcome == fanout.OutcomeDuplicate || a.Outcome == fanout.OutcomeStopped, failed: a.Outcome == fanout.OutcomeFailed}
		byPhase[a.Phase].bars = append(byPhase[a.Phase].bars, b)
		if a.Straggler {
			stragglers = append(stragglers, plotter.XY{X: b.x1, Y: b.y + 0.4})
		}
	}
	for _, b := range byPhase {
		if len(b.bars) > 0 {
			p.Add(b)
		}
	}
	if len(stragglers) > 0 {
		sc, err := plotter.NewScatter(stragglers)
		if err != nil {
			return nil, err
		}
		sc.GlyphStyle = draw.GlyphStyle{Color: stragglerColor, Radius: vg.Points(4), Shape: draw.TriangleGlyph{}}
		p.Add(sc)
		p.Legend.Add("straggler", sc)
	}
	p.Legend.Add("failed attempt", &bars{fill: color.White, outline: failedColor})
	names := make([]string, len(rep.Lanes))
	for i, l := range rep.Lanes {
		names[i] = l.Name
	}
	if len(names) > 0 && len(names) <= 40 {
		p.NominalY(names...)
	}
	p.Y.Min, p.Y.Max = -0.6, float64(len(rep.Lanes))-0.4
	return p, nil
}

func tasks(rep *report.Report) int {
	n := 0
	for _, ph := range rep.Phases {
		n += ph.Tasks
	}
	return n
}

func throughput(rep *report.Report) (*plot.Plot, error) {
	p := plot.New()
	p.Title.Text = "throughput: the attempts' bytes read and written, spread over their runs"
	p.X.Label.Text = "time since the job started (s)"
	p.Y.Label.Text = "MiB/s"
	p.Add(plotter.NewGrid())
	step, mibps := rep.Throughput(200)
	pts := make(plotter.XYs, len(mibps))
	for i, v := range mibps {
		pts[i] = plotter.XY{X: (time.Duration(i) * step).Seconds() + step.Seconds()/2, Y: v}
	}
	if len(pts) > 0 {
		l, err := plotter.NewLine(pts)
		if err != nil {
			return nil, err
		}
		l.LineStyle.Width = vg.Points(1.5)
		l.LineStyle.Color = phaseColor(0)
		p.Add(l)
	}
	p.Y.Min = 0
	return p, nil
}

type bar struct {
	x0, x1, y    float64
	pale, failed bool
}

// bars draws attempts as boxes on their lanes in one phase's colour.
type bars struct {
	bars    []bar
	fill    color.Color
	outline color.Color
}

const barHeight = 0.7 // of a lane

func (s *bars) Plot(c draw.Canvas, p *plot.Plot) {
	trX, trY := p.Transforms(&c)
	for _, b := range s.bars {
		x0, x1 := trX(b.x0), trX(b.x1)
		if x1-x0 < vg.Points(1) {
			x1 = x0 + vg.Points(1) // an instant still shows
		}
		y0, y1 := trY(b.y-barHeight/2), trY(b.y+barHeight/2)
		pts := []vg.Point{{X: x0, Y: y0}, {X: x1, Y: y0}, {X: x1, Y: y1}, {X: x0, Y: y1}}
		fill := s.fill
		if b.pale {
			fill = pale(fill)
		}
		c.FillPolygon(fill, c.ClipPolygonXY(pts))
		if b.failed {
			c.StrokeLines(draw.LineStyle{Color: failedColor, Width: vg.Points(1.5)}, c.ClipLinesXY(append(pts, pts[0]))...)
		}
	}
}

func pale(c color.Color) color.Color {
	r, g, b, _ := c.RGBA()
	mix := func(v uint32) uint8 { return uint8((v>>8 + 3*255) / 4) }
	return color.RGBA{R: mix(r), G: mix(g), B: mix(b), A: 255}
}

func (s *bars) DataRange() (xmin, xmax, ymin, ymax float64) {
	xmin, ymin = math.Inf(1), math.Inf(1)
	xmax, ymax = math.Inf(-1), math.Inf(-1)
	for _, b := range s.bars {
		xmin, xmax = math.Min(xmin, b.x0), math.Max(xmax, b.x1)
		ymin, ymax = math.Min(ymin, b.y), math.Max(ymax, b.y)
	}
	return xmin, xmax, ymin, ymax
}

func (s *bars) Thumbnail(c *draw.Canvas) {
	pts := []vg.Point{{X: c.Min.X, Y: c.Min.Y}, {X: c.Max.X, Y: c.Min.Y}, {X: c.Max.X, Y: c.Max.Y}, {X: c.Min.X, Y: c.Max.Y}}
	c.FillPolygon(s.fill, pts)
	if s.outline != nil {
		c.StrokeLines(draw.LineStyle{Color: s.outline, Width: vg.Points(1.5)}, append(pts, pts[0]))
	}
}
