package scale

import (
	"fmt"
	"strings"
)

// scaleTarget is one of issue 37's per-cluster targets for clusterpool in
// a scale run: its per-cluster slope of Figure at most Factor times
// Against's, or, without Against, at most Bound.
type scaleTarget struct {
	Name, Figure, Against string
	Factor, Bound, Unit   float64
	Format                string
}

// scaleTargets are issue 37's per-cluster targets.
var scaleTargets = []scaleTarget{
	{Name: "RSS per cluster ≤ 1.2× the floor's", Figure: "rss_bytes", Against: "floor", Factor: 1.2, Unit: 1.0 / 1024, Format: "%.1f KiB"},
	{Name: "idle requests per cluster ≤ 0.02/s", Figure: "idle_requests_per_s", Bound: 0.02, Unit: 1, Format: "%.4f/s"},
	{Name: "idle CPU per cluster ≤ 0.5× ClusterCache's", Figure: "idle_cpu_s_per_min", Against: "clustercache", Factor: 0.5, Unit: 1000, Format: "%.2f ms/min"},
}

// writeTargets adds to b the table of issue 37's targets that rep has the
// figures of: the per-cluster ones from rep's fits, the time to connect
// all at each fleet size, and dead-cluster detection per fault class.
func writeTargets(b *strings.Builder, rep scaleReport) {
	slope := map[[2]string]float64{}
	for _, f := range rep.Fits {
		slope[[2]string{f.Strategy, f.Figure}] = f.Slope
	}
	var rows []string
	for _, t := range scaleTargets {
		cp, ok := slope[[2]string{"clusterpool", t.Figure}]
		if !ok {
			continue
		}
		if t.Against == "" {
			rows = append(rows, fmt.Sprintf("| %s | "+t.Format+" | "+t.Format+" | %s |", t.Name, cp*t.Unit, t.Bound*t.Unit, yesNo(cp <= t.Bound)))
			continue
		}
		other, ok := slope[[2]string{t.Against, t.Figure}]
		if !ok {
			continue
		}
		bound := t.Factor * other
		rows = append(rows, fmt.Sprintf("| %s | "+t.Format+" | "+t.Format+" (%s "+t.Format+") | %s |",
			t.Name, cp*t.Unit, bound*t.Unit, t.Against, other*t.Unit, yesNo(cp <= bound)))
	}
	rows = append(rows, connectRows(rep)...)
	rows = append(rows, detectRows(rep)...)
	if len(rows) == 0 {
		return
	}
	b.WriteString("Issue 37's targets for clusterpool (per cluster: the slopes above):\n\n| target | clusterpool | bound | met |\n|---|---|---|---|\n")
	b.WriteString(strings.Join(rows, "\n"))
	b.WriteString("\n\n")
}

// connectRows are the targets "time to connect all ≤ ClusterCache's", one
// per fleet size both ran on.
func connectRows(rep scaleReport) []string {
	connect := map[[2]any]float64{}
	for _, r := range rep.Results {
		connect[[2]any{r.Strategy, r.Clusters}] = r.ConnectS
	}
	var rows []string
	for _, n := range rep.Options.Sizes {
		cp, ok1 := connect[[2]any{"clusterpool", n}]
		cc, ok2 := connect[[2]any{"clustercache", n}]
		if ok1 && ok2 && cp >= 0 && cc >= 0 {
			rows = append(rows, fmt.Sprintf("| time to connect all %d ≤ ClusterCache's | %.1f s | %.1f s | %s |", n, cp, cc, yesNo(cp <= cc)))
		}
	}
	return rows
}

// detectRows are the targets "every killed cluster reported not connected
// no later than ClusterCache", one per fault class: each cluster clusterpool
// was asked about is compared with ClusterCache's report of the same
// cluster and fault at the same fleet size (one ClusterCache never reported
// is beaten by any report).
func detectRows(rep scaleReport) []string {
	var rows []string
	for _, class := range faultClasses {
		var cps, ccs []detection
		met, pairs := true, 0
		for _, n := range rep.Options.Sizes {
			cp, cc := detectionsOf(rep.Results, "clusterpool", n, class), detectionsOf(rep.Results, "clustercache", n, class)
			cps, ccs = append(cps, cp...), append(ccs, cc...)
			for _, d := range cp {
				for _, e := range cc {
					if e.Cluster == d.Cluster {
						pairs++
						met = met && d.DetectS >= 0 && (e.DetectS < 0 || d.DetectS <= e.DetectS)
					}
				}
			}
		}
		if pairs == 0 {
			continue
		}
		rows = append(rows, fmt.Sprintf("| every killed cluster reported not connected no later than by ClusterCache: %s (%d, all sizes; p50 / max s) | %s | %s | %s |",
			faultNames[class], pairs, detectCell(cps), detectCell(ccs), yesNo(met)))
	}
	return rows
}

func yesNo(ok bool) string {
	if ok {
		return "yes"
	}
	return "no"
}
