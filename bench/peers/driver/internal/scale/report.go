package scale

import (
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/clusterpool/clusterpool/bench/peers/driver/internal/fleet"
)

// fitFigure is a figure fitted over N, in scaleResult's units, of the
// results Has (all if nil).
type fitFigure struct {
	Name string
	Of   func(scaleResult) float64
	Has  func(scaleResult) bool
}

// points are N and the figure of strategy s's results that have it.
func (fig fitFigure) points(results []scaleResult, s string) (xs, ys []float64) {
	for _, r := range results {
		if r.Strategy == s && (fig.Has == nil || fig.Has(r)) {
			xs, ys = append(xs, float64(r.Clusters)), append(ys, fig.Of(r))
		}
	}
	return xs, ys
}

// The figures fitted over N: scaleResult's and where its memory is.
var fitFigures = slices.Concat([]fitFigure{
	{Name: "rss_bytes", Of: func(r scaleResult) float64 { return float64(r.RSSBytes) }},
	{Name: "heap_bytes", Of: func(r scaleResult) float64 { return float64(r.HeapBytes) }},
	{Name: "goroutines", Of: func(r scaleResult) float64 { return float64(r.Goroutines) }},
	{Name: "idle_cpu_s_per_min", Of: func(r scaleResult) float64 { return r.IdleCPUPerMin }},
	{Name: "idle_requests_per_s", Of: func(r scaleResult) float64 { return r.IdleRequestsPerSec }},
	{Name: "connect_s", Of: func(r scaleResult) float64 { return r.ConnectS }, Has: func(r scaleResult) bool { return r.ConnectS >= 0 }},
}, memFigures)

// fit is one strategy's least-squares line of one figure over N: Slope is
// the figure per cluster. With one fleet size only, Slope is the figure
// divided by N and Single is set. FloorRatio is Slope over the floor's.
type fit struct {
	Strategy   string  `json:"strategy"`
	Figure     string  `json:"figure"`
	Slope      float64 `json:"slope"`
	Intercept  float64 `json:"intercept"`
	Single     bool    `json:"single,omitempty"`
	FloorRatio float64 `json:"floor_ratio,omitempty"`
}

// fits fits every figure of every strategy in results.
func fits(results []scaleResult) []fit {
	var out []fit
	floor := map[string]float64{}
	for _, s := range strategiesOf(results) {
		for _, fig := range fitFigures {
			xs, ys := fig.points(results, s)
			if len(xs) == 0 {
				continue
			}
			f := fit{Strategy: s, Figure: fig.Name}
			f.Slope, f.Intercept = leastSquares(xs, ys)
			if len(xs) == 1 {
				f.Slope, f.Intercept, f.Single = ys[0]/xs[0], 0, true
			}
			if s == "floor" {
				floor[fig.Name] = f.Slope
			}
			out = append(out, f)
		}
	}
	for i := range out {
		// The floor sends no request while idle: a ratio to its noise
		// around zero would mean nothing.
		if b := floor[out[i].Figure]; b > 0 && out[i].Figure != "idle_requests_per_s" {
			out[i].FloorRatio = out[i].Slope / b
		}
	}
	return out
}

// leastSquares returns the slope and intercept of the least-squares line
// through (xs, ys); slope 0 when every x is the same.
func leastSquares(xs, ys []float64) (slope, intercept float64) {
	n := float64(len(xs))
	var sx, sy float64
	for i := range xs {
		sx, sy = sx+xs[i], sy+ys[i]
	}
	mx, my := sx/n, sy/n
	var sxy, sxx float64
	for i := range xs {
		sxy += (xs[i] - mx) * (ys[i] - my)
		sxx += (xs[i] - mx) * (xs[i] - mx)
	}
	if sxx == 0 {
		return 0, my
	}
	slope = sxy / sxx
	return slope, my - slope*mx
}

// strategiesOf lists the strategies of results in their first order.
func strategiesOf(results []scaleResult) []string {
	var out []string
	for _, r := range results {
		if !slices.Contains(out, r.Strategy) {
			out = append(out, r.Strategy)
		}
	}
	return out
}

// writeScale prints the measured figures, the per-cluster slopes, the
// dead-cluster detection and issue 37's targets as markdown tables.
func writeScale(w io.Writer, rep scaleReport) error {
	var b strings.Builder
	b.WriteString("| clusters | peer | connect all s | RSS MiB | Go heap MiB | goroutines | idle CPU s/min | idle req/s (apiservers' count; client-go's) | TCP conns per cluster (min-max) | dials per cluster | Get p50 / p99 ms under load (failed) |\n")
	b.WriteString("|---|---|---|---|---|---|---|---|---|---|---|\n")
	for _, r := range rep.Results {
		fmt.Fprintf(&b, "| %d | %s %s | %s | %.1f | %.1f | %d | %.2f | %.1f (%.1f; %.1f) | %.2f (%d-%d) | %.2f | %s |\n",
			r.Clusters, r.Strategy, r.Version, connectCell(r.ConnectS), fleet.MiB(r.RSSBytes), fleet.MiB(r.HeapBytes), r.Goroutines,
			r.IdleCPUPerMin, r.IdleRequestsPerSec, r.IdleServerRequestsPerSec, r.IdleClientRequestsPerSec, r.ConnsPerCluster, r.ConnsMin, r.ConnsMax,
			r.DialsPerCluster, loadCell(r.Load))
	}
	fmt.Fprintf(&b, "\nWorkload apiservers' own requests (subtracted above):")
	for _, bl := range rep.Baselines {
		fmt.Fprintf(&b, " %.1f/s at %d;", bl.RequestsPerSec, bl.Clusters)
	}
	if o := rep.Options; o.LoadRate > 0 {
		fmt.Fprintf(&b, "\n\nUnder load: once idle, each peer Gets %.0f ConfigMaps a second for %s, of the clusters in turn (uncached, "+
			"through the client the peer hands its reconcilers), open loop; p50 / p99 of all Gets.", o.LoadRate, o.LoadWindow)
	}
	if len(rep.Skipped) > 0 {
		b.WriteString("\n\nNot run:\n")
		for _, s := range rep.Skipped {
			fmt.Fprintf(&b, "- %s\n", s)
		}
	}
	b.WriteString("\n\nPer cluster (least-squares slope over N; × the floor's slope):\n\n")
	b.WriteString("| peer | RSS KiB | Go heap KiB | goroutines | idle CPU ms/min | idle req/s | connect ms |\n|---|---|---|---|---|---|---|\n")
	by := fitsBy(rep.Fits)
	for _, s := range strategiesOf(rep.Results) {
		m := by[s]
		fmt.Fprintf(&b, "| %s | %s | %s | %s | %s | %s | %s |\n", s,
			slopeCell(m["rss_bytes"], 1.0/1024, "%.1f"), slopeCell(m["heap_bytes"], 1.0/1024, "%.1f"),
			slopeCell(m["goroutines"], 1, "%.2f"), slopeCell(m["idle_cpu_s_per_min"], 1000, "%.2f"),
			slopeCell(m["idle_requests_per_s"], 1, "%.3f"), slopeCell(m["connect_s"], 1000, "%.1f"))
	}
	b.WriteString("\n")
	writeMemory(&b, rep)
	writeDetection(&b, rep)
	writeTargets(&b, rep)
	_, err := io.WriteString(w, b.String())
	return err
}

// fitsBy indexes fits by strategy and figure.
func fitsBy(fits []fit) map[string]map[string]fit {
	by := map[string]map[string]fit{}
	for _, f := range fits {
		if by[f.Strategy] == nil {
			by[f.Strategy] = map[string]fit{}
		}
		by[f.Strategy][f.Figure] = f
	}
	return by
}

// loadCell is a peer's load figures: p50 / p99 ms (failed Gets).
func loadCell(l *loadFigures) string {
	if l == nil {
		return ""
	}
	return fmt.Sprintf("%.1f / %.1f (%d of %d)", l.P50Ms, l.P99Ms, l.Failed, l.Gets)
}

// idleCell is the idle window of o's sizes.
func idleCell(o scaleOptions) string {
	if o.IdleBig > 0 && o.IdleBig != o.Idle && slices.ContainsFunc(o.Sizes, func(n int) bool { return n > bigFleet }) {
		return fmt.Sprintf("%s (%s above %d Clusters)", o.Idle, o.IdleBig, bigFleet)
	}
	return o.Idle.String()
}

func connectCell(s float64) string {
	if s < 0 {
		return "not all"
	}
	return fmt.Sprintf("%.1f", s)
}

// slopeCell formats f's slope times unit, with its ratio to the floor; a
// single-size figure is marked (÷ N).
func slopeCell(f fit, unit float64, format string) string {
	if f.Figure == "" {
		return ""
	}
	s := fmt.Sprintf(format, f.Slope*unit)
	if f.Single {
		s += " (÷ N)"
	}
	if f.FloorRatio != 0 && f.Strategy != "floor" {
		s += fmt.Sprintf(" (%.2f×)", f.FloorRatio)
	}
	return s
}
