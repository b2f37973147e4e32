// Command plot draws the pictures of bench/'s reports from the JSON they
// write, one mode a report:
//
//   - default: bench/peers/results/peers.png from the bench-peers driver
//     (-json): healthy reconciles per second and reconcile p99 over time, one
//     line per real peer, in the dead and the flapping scenarios;
//   - -scale: results/scale.png from a scale run (make bench-scale): each
//     figure over the fleet size, one line per peer;
//   - -chaos: results/chaos.png from a chaos run (make chaos): Clusters
//     connected over time per ClusterCache, and the faults;
//   - -gray: results/gray.png from a gray run (make bench-gray): healthy
//     reconciles per second over time, baseline against gray run, and each
//     gray Cluster's cut-offs, a row per strategy;
//   - -scenarios: bench/results/scenarios.png from bench/cmd/scenarios: healthy
//     throughput and reconcile p99 against the fraction of dead clusters
//     (scenario 2 of bench/sim), one line per strategy.
//
// It is a module of its own so that gonum plot stays out of the library's
// and the benchmarks' dependencies. From this folder:
//
//	go run . -in ../peers/results/peers.json -out ../peers/results/peers.png
//	go run . -scale -in ../peers/results/scale.json -out ../peers/results/scale.png
//	go run . -chaos -in ../peers/results/chaos.json -out ../peers/results/chaos.png
//	go run . -gray -in ../peers/results/gray.json -out ../peers/results/gray.png
//	go run . -scenarios -in ../results/scenarios.json -out ../results/scenarios.png
package main

import (
	"flag"
	"fmt"
	"image/color"
	"os"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgimg"

	"github.com/clusterpool/clusterpool/bench/peers/protocol"
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

// peerScenarios are the rows of the default plot.
var peerScenarios = []string{"dead", "flapping"}

func main() {
	in := flag.String("in", "../peers/results/peers.json", "the report's JSON")
	out := flag.String("out", "../peers/results/peers.png", "PNG to write")
	scale := flag.Bool("scale", false, "the input is a scale run's (make bench-scale): draw each figure over the fleet size")
	chaos := flag.Bool("chaos", false, "the input is a chaos run's (make chaos): Clusters connected over time, and the faults")
	gray := flag.Bool("gray", false, "the input is a gray run's (make bench-gray): healthy throughput, baseline against gray, and the gray Clusters' cut-offs")
	scenarios := flag.Bool("scenarios", false, "the input is bench/cmd/scenarios' (make bench-scenarios): scenario 2 over the dead fraction")
	flag.Parse()
	plotFn := run
	switch {
	case *scale:
		plotFn = runScale
	case *chaos:
		plotFn = runChaos
	case *gray:
		plotFn = runGray
	case *scenarios:
		plotFn = runScenarios
	}
	if err := plotFn(*in, *out); err != nil {
		fmt.Fprintln(os.Stderr, "plot:", err)
		os.Exit(1)
	}
}

func run(in, out string) error {
	var rep report
	if err := protocol.ReadReport(in, &rep); err != nil {
		return err
	}
	grid := make([][]*plot.Plot, len(peerScenarios))
	for row, sc := range peerScenarios {
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

// save draws grid (rows of plots, 4 inches high each) with title on top
// into the PNG out.
func save(grid [][]*plot.Plot, title, out string) error {
	const w = 12 * vg.Inch
	h := 4 * vg.Inch * vg.Length(len(grid))
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
	st := lineStyle{name: r.Strategy + " " + r.Figures.Version, color: c, width: vg.Points(1.5), shape: i}
	if err := addLine(thr, t, st); err != nil {
		return fmt.Errorf("%s %s: %w", r.Scenario, r.Strategy, err)
	}
	if err := addLine(p99, p, st); err != nil {
		return fmt.Errorf("%s %s: %w", r.Scenario, r.Strategy, err)
	}
	return nil
}

// lineStyle is how addLine draws a series: its legend name, colour, width,
// the index of its point shape, and whether it is dashed.
type lineStyle struct {
	name   string
	color  color.Color
	width  vg.Length
	shape  int
	dashed bool
}

// addLine adds xy to pl as a line with points in style st, with a legend
// entry; an empty xy adds nothing.
func addLine(pl *plot.Plot, xy plotter.XYs, st lineStyle) error {
	if len(xy) == 0 {
		return nil
	}
	l, pts, err := plotter.NewLinePoints(xy)
	if err != nil {
		return err
	}
	l.Color, pts.Color = st.color, st.color
	l.Width = st.width
	pts.Shape = shapes[st.shape%len(shapes)]
	if st.dashed {
		l.Dashes = []vg.Length{vg.Points(5), vg.Points(3)}
	}
	pl.Add(l, pts)
	pl.Legend.Add(st.name, l, pts)
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
