package main

import (
	"fmt"
	"image/color"
	"slices"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
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
}

// runScale draws every panel of a scale run's JSON in into the PNG out.
func runScale(in, out string) error {
	var rep scaleReport
	if err := readJSON(in, &rep); err != nil {
		return err
	}
	var order []string
	for _, r := range rep.Results {
		if !slices.Contains(order, r.Strategy) {
			order = append(order, r.Strategy)
		}
	}
	grid := make([][]*plot.Plot, len(scalePanels))
	for i, row := range scalePanels {
		for _, panel := range row {
			p := plot.New()
			p.Title.Text, p.X.Label.Text, p.Y.Label.Text = panel.title, "Clusters", panel.y
			p.Legend.Top, p.Legend.Left = true, true
			p.Add(plotter.NewGrid())
			for k, s := range order {
				if err := addScaleLine(p, rep.Results, s, k, panel.of); err != nil {
					return err
				}
			}
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
