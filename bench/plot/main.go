// Command plot draws bench/results/scenarios.png from the JSON the
// scenarios command writes: healthy throughput and reconcile p99 against the
// fraction of dead clusters (scenario 2), one line per strategy. It is its
// own module so that gonum plot stays out of the library's dependencies.
//
//	go run . -in ../results/scenarios.json -out ../results/scenarios.png
package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"image/color"
	"os"
	"sort"
	"strings"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgimg"
)

// result holds the fields of bench/sim.Result the plot needs.
type result struct {
	Scenario string  `json:"scenario"`
	Strategy string  `json:"strategy"`
	Dead     float64 `json:"dead_fraction"`
	Healthy  float64 `json:"healthy_per_s"`
	P99      float64 `json:"p99_ms"`
}

type file struct {
	Clock   string   `json:"clock"`
	Scale   float64  `json:"scale"`
	Workers int      `json:"workers"`
	Results []result `json:"results"`
}

var colors = map[string]color.Color{
	"cct":          color.RGBA{R: 0xd6, G: 0x27, B: 0x28, A: 0xff},
	"clustercache": color.RGBA{R: 0xff, G: 0x7f, B: 0x0e, A: 0xff},
	"clusterpool":  color.RGBA{R: 0x1f, G: 0x77, B: 0xb4, A: 0xff},
}

func main() {
	in := flag.String("in", "../results/scenarios.json", "results of the scenarios command")
	out := flag.String("out", "../results/scenarios.png", "PNG to write")
	flag.Parse()
	if err := run(*in, *out); err != nil {
		fmt.Fprintln(os.Stderr, "plot:", err)
		os.Exit(1)
	}
}

func run(in, out string) error {
	b, err := os.ReadFile(in)
	if err != nil {
		return err
	}
	var f file
	if err := json.Unmarshal(b, &f); err != nil {
		return fmt.Errorf("%s: %w", in, err)
	}
	series := map[string][]result{}
	for _, r := range f.Results {
		if r.Scenario == "2-dead" {
			series[r.Strategy] = append(series[r.Strategy], r)
		}
	}
	if len(series) == 0 {
		return fmt.Errorf("%s: no 2-dead results", in)
	}
	names := make([]string, 0, len(series))
	for n := range series {
		names = append(names, n)
	}
	sort.Strings(names)

	thr := newPlot("Healthy reconciles per second (whole run)", "healthy reconciles / s")
	p99 := newPlot("Reconcile duration p99", "p99 (ms, log scale)")
	p99.Y.Scale = plot.LogScale{}
	p99.Y.Tick.Marker = plot.LogTicks{Prec: -1}
	for i, n := range names {
		rs := series[n]
		sort.Slice(rs, func(a, b int) bool { return rs[a].Dead < rs[b].Dead })
		var t, p plotter.XYs
		for _, r := range rs {
			t = append(t, plotter.XY{X: r.Dead * 100, Y: r.Healthy})
			p = append(p, plotter.XY{X: r.Dead * 100, Y: r.P99})
		}
		c, ok := colors[n]
		dashed := !ok // variants: dashed, in their base's colour
		if !ok {
			c = colors["clusterpool"]
		}
		for j, pl := range []*plot.Plot{thr, p99} {
			xy := t
			if j == 1 {
				xy = p
			}
			l, pts, err := plotter.NewLinePoints(xy)
			if err != nil {
				return err
			}
			l.Color, pts.Color = c, c
			l.Width = vg.Points(2)
			pts.Shape = shape(i)
			if dashed {
				l.Dashes = []vg.Length{vg.Points(5), vg.Points(3)}
			}
			pl.Add(l, pts)
			pl.Legend.Add(n, l, pts)
		}
	}
	// Headroom above the lines for the legends.
	thr.Y.Min, thr.Y.Max = 0, thr.Y.Max*1.35
	thr.Legend.Top = true
	p99.Y.Max *= 8
	p99.Legend.Top = true
	var ticks []plot.Tick
	for _, r := range series[names[0]] {
		ticks = append(ticks, plot.Tick{Value: r.Dead * 100, Label: fmt.Sprintf("%.0f", r.Dead*100)})
	}
	thr.X.Tick.Marker, p99.X.Tick.Marker = plot.ConstantTicks(ticks), plot.ConstantTicks(ticks)

	const w, h = 12 * vg.Inch, 4.5 * vg.Inch
	img := vgimg.New(w, h)
	dc := draw.New(img)
	tiles := draw.Tiles{Rows: 1, Cols: 2, PadX: vg.Inch / 4, PadTop: vg.Inch / 3, PadBottom: vg.Inch / 8, PadLeft: vg.Inch / 8, PadRight: vg.Inch / 8}
	canvases := plot.Align([][]*plot.Plot{{thr, p99}}, tiles, dc)
	thr.Draw(canvases[0][0])
	p99.Draw(canvases[0][1])
	clock := fmt.Sprintf("time scale %g (unscaled seconds)", f.Scale)
	if strings.HasPrefix(f.Clock, "Virtual") {
		clock = "virtual time"
	}
	title := fmt.Sprintf("bench/sim scenario 2: 1000 clusters × 20 objects, %d workers, %s", f.Workers, clock)
	dc.FillText(draw.TextStyle{Color: color.Black, Font: thr.Title.TextStyle.Font, XAlign: draw.XCenter, YAlign: draw.YTop,
		Handler: thr.Title.TextStyle.Handler}, vg.Point{X: w / 2, Y: h - vg.Points(4)}, title)

	fh, err := os.Create(out)
	if err != nil {
		return err
	}
	if _, err := (vgimg.PngCanvas{Canvas: img}).WriteTo(fh); err != nil {
		fh.Close()
		return err
	}
	return fh.Close()
}

func newPlot(title, y string) *plot.Plot {
	p := plot.New()
	p.Title.Text = title
	p.X.Label.Text = "dead clusters (%)"
	p.Y.Label.Text = y
	p.Add(plotter.NewGrid())
	return p
}

func shape(i int) draw.GlyphDrawer {
	shapes := []draw.GlyphDrawer{draw.CircleGlyph{}, draw.SquareGlyph{}, draw.TriangleGlyph{}, draw.PlusGlyph{}, draw.CrossGlyph{}}
	return shapes[i%len(shapes)]
}
