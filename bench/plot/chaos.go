package main

import (
	"fmt"
	"image/color"
	"slices"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"

	"github.com/clusterpool/clusterpool/bench/peers/protocol"
)

// chaosReport holds the fields of the driver's chaos JSON the plot needs.
type chaosReport struct {
	Machine    string `json:"machine"`
	Clusters   int    `json:"clusters"`
	APIServers int    `json:"workload_apiservers"`
	Options    struct {
		Seed uint64 `json:"seed"`
	} `json:"options"`
	Results []struct {
		Cache string `json:"cache"`
		// Title names the cache (empty in runs before it was written).
		Title  string `json:"title"`
		Points []struct {
			T         float64 `json:"t"`
			Connected float64 `json:"connected"`
		} `json:"points"`
		Events []struct {
			Class string  `json:"class"`
			Start float64 `json:"start_s"`
			End   float64 `json:"end_s"`
		} `json:"events"`
	} `json:"results"`
}

// chaosClassOrder is the fault rows' order, top to bottom (the driver's
// registry, driver/internal/chaos/classes.go); a class the run has that is not
// here gets a row below them (classRows).
var chaosClassOrder = []string{"apiserver-stop", "apiserver-restart", "blackhole", "reset", "first-byte", "trickle",
	"slow", "errors-20", "errors-60", "throttled", "token-rotate", "cert-rotate", "secret-delete", "secret-garbage", "cluster-recreate", "cluster-add", "infra-flip",
	"mgmt-restart", "manager-kill"}

// cacheColors are the chaos plot's lines.
var cacheColors = map[string]color.Color{"adapter": colors["clusterpool"], "stock": colors["clustercache"]}

// runChaos draws a chaos run's JSON in into the PNG out: connected
// Clusters over time per cache, and below it the faults of the schedule,
// one row per class, each from its start to its end.
func runChaos(in, out string) error {
	var rep chaosReport
	if err := protocol.ReadReport(in, &rep); err != nil {
		return err
	}
	if len(rep.Results) == 0 {
		return fmt.Errorf("%s: no results", in)
	}
	conn := newPlot("Clusters connected (every live Cluster, sampled each second)", "Clusters connected")
	conn.X.Label.Text = "time since the first fault (s)"
	for i, r := range rep.Results {
		var xy plotter.XYs
		for _, p := range r.Points {
			xy = append(xy, plotter.XY{X: p.T, Y: p.Connected})
		}
		l, err := plotter.NewLine(xy)
		if err != nil {
			return fmt.Errorf("%s: %w", r.Cache, err)
		}
		l.Color = cacheColors[r.Cache]
		l.Width = vg.Points(1)
		if i > 0 {
			l.Dashes = []vg.Length{vg.Points(4), vg.Points(2)}
		}
		conn.Add(l)
		name := r.Title
		if name == "" {
			name = r.Cache
		}
		conn.Legend.Add(name, l)
	}
	conn.Y.Min = 0
	faults, err := faultRows(rep)
	if err != nil {
		return err
	}
	faults.X.Min, faults.X.Max = conn.X.Min, conn.X.Max
	title := fmt.Sprintf("chaos: %d Clusters on %d workload apiservers, seed %d; %s", rep.Clusters, rep.APIServers, rep.Options.Seed, rep.Machine)
	return save([][]*plot.Plot{{conn}, {faults}}, title, out)
}

// faultRows plots the first result's faults (the schedule is the same
// for every cache), one row per class.
func faultRows(rep chaosReport) (*plot.Plot, error) {
	p := newPlot("faults (start to end)", "")
	p.X.Label.Text = "time since the first fault (s)"
	p.Legend.Top = false
	classes := classRows(rep)
	row := map[string]int{}
	var ticks []plot.Tick
	for i, c := range classes {
		y := len(classes) - i
		row[c] = y
		ticks = append(ticks, plot.Tick{Value: float64(y), Label: c})
	}
	p.Y.Tick.Marker = plot.ConstantTicks(ticks)
	p.Y.Min, p.Y.Max = 0, float64(len(classes)+1)
	for _, e := range rep.Results[0].Events {
		y := float64(row[e.Class])
		end := max(e.End, e.Start+1) // instant faults as a 1 s mark
		l, err := plotter.NewLine(plotter.XYs{{X: e.Start, Y: y}, {X: end, Y: y}})
		if err != nil {
			return nil, err
		}
		l.Width = vg.Points(5)
		l.Color = color.RGBA{R: 0xd6, G: 0x27, B: 0x28, A: 0xff}
		p.Add(l)
	}
	return p, nil
}

// classRows is chaosClassOrder, then each class of the first result's
// faults that it lacks, in their order.
func classRows(rep chaosReport) []string {
	rows := slices.Clone(chaosClassOrder)
	for _, e := range rep.Results[0].Events {
		if !slices.Contains(rows, e.Class) {
			rows = append(rows, e.Class)
		}
	}
	return rows
}
