package main

import (
	"fmt"
	"sort"
	"strings"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"

	"github.com/clusterpool/clusterpool/bench/peers/protocol"
)

// scenarioResult holds the fields of bench/sim.Result the -scenarios plot
// needs.
type scenarioResult struct {
	Scenario string  `json:"scenario"`
	Strategy string  `json:"strategy"`
	Dead     float64 `json:"dead_fraction"`
	Healthy  float64 `json:"healthy_per_s"`
	P99      float64 `json:"p99_ms"`
}

// scenarioReport is what bench/cmd/scenarios writes (make bench-scenarios).
type scenarioReport struct {
	Clock   string           `json:"clock"`
	Scale   float64          `json:"scale"`
	Workers int              `json:"workers"`
	Results []scenarioResult `json:"results"`
}

// runScenarios draws scenario 2 of bench/sim: healthy throughput and
// reconcile p99 against the fraction of dead clusters, one line per
// strategy; a variant (a strategy without a colour of its own) is dashed in
// clusterpool's colour.
func runScenarios(in, out string) error {
	var rep scenarioReport
	if err := protocol.ReadReport(in, &rep); err != nil {
		return err
	}
	series := map[string][]scenarioResult{}
	for _, r := range rep.Results {
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
		if err := addScenarioLines(thr, p99, n, series[n], i); err != nil {
			return err
		}
	}
	thr.Y.Min, thr.Y.Max = 0, thr.Y.Max*1.35
	p99.Y.Max *= 8
	var ticks []plot.Tick
	for _, r := range series[names[0]] {
		ticks = append(ticks, plot.Tick{Value: r.Dead * 100, Label: fmt.Sprintf("%.0f", r.Dead*100)})
	}
	for _, p := range []*plot.Plot{thr, p99} {
		p.X.Label.Text = "dead clusters (%)"
		p.X.Tick.Marker = plot.ConstantTicks(ticks)
	}
	clock := fmt.Sprintf("time scale %g (unscaled seconds)", rep.Scale)
	if strings.HasPrefix(rep.Clock, "Virtual") {
		clock = "virtual time"
	}
	title := fmt.Sprintf("bench/sim scenario 2: 1000 clusters × 20 objects, %d workers, %s", rep.Workers, clock)
	return save([][]*plot.Plot{{thr, p99}}, title, out)
}

// addScenarioLines adds strategy n's throughput and p99 over the dead
// fraction as the i-th line of thr and p99.
func addScenarioLines(thr, p99 *plot.Plot, n string, rs []scenarioResult, i int) error {
	sort.Slice(rs, func(a, b int) bool { return rs[a].Dead < rs[b].Dead })
	var t, p plotter.XYs
	for _, r := range rs {
		t = append(t, plotter.XY{X: r.Dead * 100, Y: r.Healthy})
		p = append(p, plotter.XY{X: r.Dead * 100, Y: r.P99})
	}
	c, ok := colors[n]
	if !ok {
		c = colors["clusterpool"]
	}
	st := lineStyle{name: n, color: c, width: vg.Points(2), shape: i, dashed: !ok}
	if err := addLine(thr, t, st); err != nil {
		return fmt.Errorf("%s: %w", n, err)
	}
	if err := addLine(p99, p, st); err != nil {
		return fmt.Errorf("%s: %w", n, err)
	}
	return nil
}
