package main

import (
	"fmt"
	"image/color"
	"math"
	"slices"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"

	"github.com/clusterpool/clusterpool/bench/peers/protocol"
)

// scaleResult holds the fields of the driver's scale JSON the plot needs.
type scaleResult struct {
	Clusters      int     `json:"clusters"`
	Strategy      string  `json:"strategy"`
	Version       string  `json:"version"`
	ConnectS      float64 `json:"connect_s"`
	RSSBytes      float64 `json:"rss_bytes"`
	HeapBytes     float64 `json:"heap_bytes"`
	Goroutines    float64 `json:"goroutines"`
	IdleCPUPerMin float64 `json:"idle_cpu_s_per_min"`
	IdleReqPerSec float64 `json:"idle_requests_per_s"`
	Load          *struct {
		P99Ms float64 `json:"p99_ms"`
	} `json:"load"`
	Detections []struct {
		DetectS float64 `json:"detect_s"`
	} `json:"detections"`
}

// loadP99 is r's Get p99 under load in ms (-1: none, not drawn).
func (r scaleResult) loadP99() float64 {
	if r.Load == nil {
		return -1
	}
	return r.Load.P99Ms
}

// detect is r's q-th quantile of the killed clusters' detection times in s
// (nearest rank, a cluster never reported ranking last); -1 (not drawn)
// without detections or when the quantile is a cluster never reported.
func (r scaleResult) detect(q float64) float64 {
	var times []float64
	for _, d := range r.Detections {
		if d.DetectS < 0 {
			continue
		}
		times = append(times, d.DetectS)
	}
	i := min(len(r.Detections)-1, int(q*float64(len(r.Detections))))
	if len(r.Detections) == 0 || i >= len(times) {
		return -1
	}
	slices.Sort(times)
	return times[i]
}

type scaleReport struct {
	Machine    string        `json:"machine"`
	APIServers int           `json:"workload_apiservers"`
	Results    []scaleResult `json:"results"`
}

// scalePanels are the scale plot's panels, row by row.
var scalePanels = [][]struct {
	title, y string
	of       func(scaleResult) float64
}{
	{
		{"RSS once connected and idle", "MiB", func(r scaleResult) float64 { return r.RSSBytes / (1 << 20) }},
		{"live Go heap", "MiB", func(r scaleResult) float64 { return r.HeapBytes / (1 << 20) }},
		{"goroutines", "goroutines", func(r scaleResult) float64 { return r.Goroutines }},
	},
	{
		{"idle CPU", "CPU s per minute", func(r scaleResult) float64 { return r.IdleCPUPerMin }},
		{"idle requests to the apiservers", "requests / s", func(r scaleResult) float64 { return r.IdleReqPerSec }},
		{"time until every cluster is connected", "s", func(r scaleResult) float64 { return r.ConnectS }},
	},
	{
		{"p99 of a Get under steady load", "ms", scaleResult.loadP99},
		{"dead-cluster detection, p50 of the killed", "s", func(r scaleResult) float64 { return r.detect(0.5) }},
		{"dead-cluster detection, max of the killed", "s", func(r scaleResult) float64 { return r.detect(1) }},
	},
}

// runScale draws every panel of a scale run's JSON in into the PNG out.
func runScale(in, out string) error {
	var rep scaleReport
	if err := protocol.ReadReport(in, &rep); err != nil {
		return err
	}
	var order []string
	var ticks plot.ConstantTicks // one at each fleet size
	lo, hi := math.Inf(1), 0.0
	for _, r := range rep.Results {
		if !slices.Contains(order, r.Strategy) {
			order = append(order, r.Strategy)
		}
		x := float64(r.Clusters)
		if !slices.ContainsFunc(ticks, func(t plot.Tick) bool { return t.Value == x }) {
			ticks = append(ticks, plot.Tick{Value: x, Label: fmt.Sprint(r.Clusters)})
		}
		lo, hi = min(lo, x), max(hi, x)
	}
	if len(order) == 0 {
		return fmt.Errorf("%s: no results", in)
	}
	grid := make([][]*plot.Plot, len(scalePanels))
	for i, row := range scalePanels {
		for _, panel := range row {
			p := plot.New()
			p.Title.Text, p.X.Label.Text, p.Y.Label.Text = panel.title, "Clusters (log scale)", panel.y
			p.X.Scale, p.X.Tick.Marker = plot.LogScale{}, ticks
			p.Legend.Top, p.Legend.Left = true, true
			p.Add(plotter.NewGrid())
			for k, s := range order {
				if err := addScaleLine(p, rep.Results, s, k, panel.of); err != nil {
					return err
				}
			}
			// Every panel spans the sizes, one without lines too (a log
			// scale needs a positive range).
			p.X.Min, p.X.Max = min(p.X.Min, lo), max(p.X.Max, hi)
			p.Y.Min = 0
			grid[i] = append(grid[i], p)
		}
	}
	title := fmt.Sprintf("scale: real peers and the client-go floor, %d workload apiservers; %s", rep.APIServers, rep.Machine)
	return save(grid, title, out)
}

// addScaleLine adds strategy s's figure of over N to p as its k-th line.
func addScaleLine(p *plot.Plot, results []scaleResult, s string, k int, of func(scaleResult) float64) error {
	var xy plotter.XYs
	version := ""
	for _, r := range results {
		if r.Strategy == s && !(of(r) < 0) {
			xy = append(xy, plotter.XY{X: float64(r.Clusters), Y: of(r)})
			version = r.Version
		}
	}
	if len(xy) == 0 {
		return nil
	}
	l, pts, err := plotter.NewLinePoints(xy)
	if err != nil {
		return fmt.Errorf("%s: %w", s, err)
	}
	c, ok := colors[s]
	if !ok {
		c = color.Gray{Y: 0x60}
	}
	l.Color, pts.Color, l.Width = c, c, vg.Points(1.5)
	pts.Shape = shapes[k%len(shapes)]
	p.Add(l, pts)
	p.Legend.Add(s+" "+version, l, pts)
	return nil
}
