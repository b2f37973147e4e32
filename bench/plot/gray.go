package main

import (
	"fmt"
	"image/color"
	"slices"
	"strings"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"

	"github.com/clusterpool/clusterpool/bench/peers/protocol"
)

// grayRun and grayReport hold the fields of the driver's gray JSON (make
// bench-gray) the plot needs.
type grayRun struct {
	Strategy         string `json:"strategy"`
	Phase            string `json:"phase"`
	FaultsFromUnixMs int64  `json:"faults_from_unix_ms"`
	Figures          struct {
		Version      string  `json:"version"`
		StartUnixMs  int64   `json:"start_unix_ms"`
		Series       []point `json:"series"`
		Availability *struct {
			NotConnected map[string][][2]int64 `json:"not_connected_unix_ms"`
			BreakerOpen  map[string][][2]int64 `json:"breaker_open_unix_ms"`
		} `json:"availability"`
	} `json:"figures"`
	Clusters []grayCluster `json:"gray_clusters"`
}

// grayCluster is one gray Cluster of a run.
type grayCluster struct {
	Name  string `json:"name"`
	Class string `json:"class"`
}

type grayReport struct {
	Machine string `json:"machine"`
	Config  struct {
		Clusters int `json:"clusters"`
		Objects  int `json:"objects_per_cluster"`
	} `json:"config"`
	Strategies []string  `json:"strategies"`
	Runs       []grayRun `json:"runs"`
}

// runGray draws a gray run's JSON in into the PNG out: a row per strategy;
// on the left healthy reconciles per second over time, baseline (dashed)
// and gray run; on the right each gray Cluster's cut-offs in the gray run
// (not connected; breaker open, for a strategy with one), a row each.
func runGray(in, out string) error {
	var rep grayReport
	if err := protocol.ReadReport(in, &rep); err != nil {
		return err
	}
	var grid [][]*plot.Plot
	for _, s := range rep.Strategies {
		thr := newPlot(s+": healthy reconciles per second", "healthy reconciles / s")
		thr.X.Label.Text = "time since the faults started (s)"
		var gray *grayRun
		for i := range rep.Runs {
			r := &rep.Runs[i]
			if r.Strategy != s {
				continue
			}
			if err := addLine(thr, shifted(r), lineStyle{name: r.Phase, color: colors[s], width: vg.Points(1.5),
				shape: i, dashed: r.Phase == "baseline"}); err != nil {
				return err
			}
			if r.Phase == "gray" {
				gray = r
			}
		}
		if gray == nil {
			return fmt.Errorf("%s: no gray run of %s", in, s)
		}
		thr.Y.Min = 0
		cuts, err := cutRows(s, gray)
		if err != nil {
			return err
		}
		cuts.X.Min, cuts.X.Max = thr.X.Min, thr.X.Max
		grid = append(grid, []*plot.Plot{thr, cuts})
	}
	if len(grid) == 0 {
		return fmt.Errorf("%s: no strategy", in)
	}
	title := fmt.Sprintf("gray run: %d clusters × %d objects; %s", rep.Config.Clusters, rep.Config.Objects, rep.Machine)
	return save(grid, title, out)
}

// shifted is r's healthy throughput series with time counted from the
// faults' start, without its last bucket: the run ends within it, and a
// few reconciles over a sliver of a bucket are no rate.
func shifted(r *grayRun) plotter.XYs {
	off := float64(r.FaultsFromUnixMs-r.Figures.StartUnixMs) / 1000
	var xy plotter.XYs
	series := r.Figures.Series
	for _, p := range series[:max(len(series)-1, 0)] {
		xy = append(xy, plotter.XY{X: p.T - off, Y: p.HealthyPerSec})
	}
	return xy
}

// cutRows plots the gray run's cut-offs, one row per gray Cluster (by
// class): not connected in a thick bar, breaker open in a thin one.
func cutRows(strategy string, r *grayRun) (*plot.Plot, error) {
	p := newPlot(strategy+": gray Clusters cut off (thick: not connected; thin: breaker open)", "")
	p.X.Label.Text = "time since the faults started (s)"
	p.Legend.Top = false
	clusters := slices.Clone(r.Clusters)
	slices.SortStableFunc(clusters, func(a, b grayCluster) int { return strings.Compare(a.Class, b.Class) })
	var ticks []plot.Tick
	for i, c := range clusters {
		ticks = append(ticks, plot.Tick{Value: float64(len(clusters) - i), Label: c.Class + " " + c.Name})
	}
	p.Y.Tick.Marker = plot.ConstantTicks(ticks)
	p.Y.Min, p.Y.Max = 0, float64(len(clusters)+1)
	a := r.Figures.Availability
	if a == nil {
		return p, nil
	}
	for i, c := range clusters {
		y := float64(len(clusters) - i)
		for _, bar := range []struct {
			ivs   [][2]int64
			width vg.Length
			c     color.Color
		}{{a.NotConnected[c.Name], vg.Points(6), colors["clustercache"]}, {a.BreakerOpen[c.Name], vg.Points(2), colors["cct"]}} {
			for _, iv := range bar.ivs {
				from := float64(iv[0]-r.FaultsFromUnixMs) / 1000
				to := max(float64(iv[1]-r.FaultsFromUnixMs)/1000, from+0.5)
				l, err := plotter.NewLine(plotter.XYs{{X: from, Y: y}, {X: to, Y: y}})
				if err != nil {
					return nil, err
				}
				l.Width, l.Color = bar.width, bar.c
				p.Add(l)
			}
		}
	}
	return p, nil
}
