// Command plot draws bench/peers/results/peers.png from the JSON the
// bench-peers driver writes (-json): healthy reconciles per second and
// reconcile p99 over time, one line per real peer, in the dead and the
// flapping scenarios; with -scale, results/scale.png from a scale run
// (make bench-scale): each figure over the fleet size, one line per peer;
// with -chaos, results/chaos.png from a chaos run (make chaos): Clusters
// connected over time per ClusterCache, and the faults.
// It is a module of its own so that gonum plot stays out of the library's
// dependencies.
//
//	go run . -in ../results/peers.json -out ../results/peers.png
//	go run . -scale -in ../results/scale.json -out ../results/scale.png
//	go run . -chaos -in ../results/chaos.json -out ../results/chaos.png
package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"image/color"
	"os"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgimg"
)

// point, result and report hold the fields of the driver's JSON the plot
// needs.
type point struct {
	T             float64 `json:"t_s"`
	HealthyPerSec float64 `json:"healthy_per_s"`
	P99Ms         float64 `json:"p99_ms"`
}

type result struct {
	Scenario string `json:"scenario"`
	Strategy string `json:"strategy"`
	Figures  struct {
		Version string  `json:"version"`
		Series  []point `json:"series"`
	} `json:"figures"`
}

type report struct {
	Machine string `json:"machine"`
	Config  struct {
		Clusters int `json:"clusters"`
		Objects  int `json:"objects_per_cluster"`
		Workers  int `json:"workers"`
	} `json:"config"`
	Results []result `json:"results"`
}

var colors = map[string]color.Color{
	"cct":          color.RGBA{R: 0xd6, G: 0x27, B: 0x28, A: 0xff},
	"clustercache": color.RGBA{R: 0xff, G: 0x7f, B: 0x0e, A: 0xff},
	"clusterpool":  color.RGBA{R: 0x1f, G: 0x77, B: 0xb4, A: 0xff},
	"floor":        color.Black,
}

// scenarios are the plot's rows.
var scenarios = []string{"dead", "flapping"}

func main() {
	in := flag.String("in", "../results/peers.json", "the driver's -json output")
	out := flag.String("out", "../results/peers.png", "PNG to write")
	scale := flag.Bool("scale", false, "the input is a scale run's (make bench-scale): draw each figure over the fleet size")
	chaos := flag.Bool("chaos", false, "the input is a chaos run's (make chaos): Clusters connected over time, and the faults")
	flag.Parse()
	plotFn := run
	switch {
	case *scale:
		plotFn = runScale
	case *chaos:
		plotFn = runChaos
	}
	if err := plotFn(*in, *out); err != nil {
		fmt.Fprintln(os.Stderr, "plot:", err)
		os.Exit(1)
	}
}

func run(in, out string) error {
	var rep report
	if err := readJSON(in, &rep); err != nil {
		return err
	}
	grid := make([][]*plot.Plot, len(scenarios))
	for row, sc := range scenarios {
		thr := newPlot(sc+": healthy reconciles per second", "healthy reconciles / s")
		p99 := newPlot(sc+": reconcile p99", "p99 (ms, log scale)")
		p99.Y.Scale = plot.LogScale{}
		p99.Y.Tick.Marker = plot.LogTicks{Prec: -1}
		n := 0
		for _, r := range rep.Results {
			if r.Scenario != sc {
				continue
			}
			if err := addLines(thr, p99, r, n); err != nil {
				return err
			}
			n++
		}
		if n == 0 {
			return fmt.Errorf("%s: no %s results", in, sc)
		}
		thr.Y.Min, thr.Y.Max = 0, thr.Y.Max*1.3
		p99.Y.Max *= 8
		grid[row] = []*plot.Plot{thr, p99}
	}
	title := fmt.Sprintf("real peers, %d clusters × %d objects, %d workers; %s", rep.Config.Clusters, rep.Config.Objects,
		rep.Config.Workers, rep.Machine)
	return save(grid, title, out)
}

// save draws grid (rows of plots) with title on top into the PNG out.
func save(grid [][]*plot.Plot, title, out string) error {
	const w, h = 12 * vg.Inch, 8 * vg.Inch
	img := vgimg.New(w, h)
	dc := draw.New(img)
	tiles := draw.Tiles{Rows: len(grid), Cols: len(grid[0]), PadX: vg.Inch / 4, PadY: vg.Inch / 4, PadTop: vg.Inch / 3,
		PadBottom: vg.Inch / 8, PadLeft: vg.Inch / 8, PadRight: vg.Inch / 8}
	canvases := plot.Align(grid, tiles, dc)
	for i := range grid {
		for j := range grid[i] {
			grid[i][j].Draw(canvases[i][j])
		}
	}
	ts := grid[0][0].Title.TextStyle
	dc.FillText(draw.TextStyle{Color: color.Black, Font: ts.Font, XAlign: draw.XCenter, YAlign: draw.YTop, Handler: ts.Handler},
		vg.Point{X: w / 2, Y: h - vg.Points(4)}, title)
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

// addLines adds r's throughput and p99 series (buckets without
// reconciles are left out of the p99 line) as the i-th strategy.
func addLines(thr, p99 *plot.Plot, r result, i int) error {
	var t, p plotter.XYs
	for _, pt := range r.Figures.Series {
		t = append(t, plotter.XY{X: pt.T, Y: pt.HealthyPerSec})
		if pt.P99Ms > 0 {
			p = append(p, plotter.XY{X: pt.T, Y: pt.P99Ms})
		}
	}
	c, ok := colors[r.Strategy]
	if !ok {
		c = color.Gray{Y: 0x60}
	}
	name := r.Strategy + " " + r.Figures.Version
	for _, pair := range []struct {
		pl *plot.Plot
		xy plotter.XYs
	}{{thr, t}, {p99, p}} {
		if len(pair.xy) == 0 {
			continue
		}
		l, pts, err := plotter.NewLinePoints(pair.xy)
		if err != nil {
			return fmt.Errorf("%s %s: %w", r.Scenario, r.Strategy, err)
		}
		l.Color, pts.Color = c, c
		l.Width = vg.Points(1.5)
		pts.Shape = shapes[i%len(shapes)]
		pair.pl.Add(l, pts)
		pair.pl.Legend.Add(name, l, pts)
	}
	return nil
}

var shapes = []draw.GlyphDrawer{draw.CircleGlyph{}, draw.TriangleGlyph{}, draw.BoxGlyph{}}

func newPlot(title, y string) *plot.Plot {
	p := plot.New()
	p.Title.Text = title
	p.X.Label.Text = "time since the peer started (s)"
	p.Y.Label.Text = y
	p.Legend.Top = true
	p.Add(plotter.NewGrid())
	return p
}

// readJSON reads the driver's -json file in into v.
func readJSON(in string, v any) error {
	b, err := os.ReadFile(in)
	if err != nil {
		return err
	}
	if err := json.Unmarshal(b, v); err != nil {
		return fmt.Errorf("%s: %w", in, err)
	}
	return nil
}
