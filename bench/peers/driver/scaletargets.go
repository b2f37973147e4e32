package main

import (
	"fmt"
	"strings"
)

// scaleTarget is one of issue 27's targets for clusterpool in a scale run:
// its per-cluster slope of Figure at most Factor times Against's.
type scaleTarget struct {
	Name, Figure, Against string
	Factor, Unit          float64
	Format                string
}

// scaleTargets are issue 27's per-cluster targets.
var scaleTargets = []scaleTarget{
	{"RSS per cluster ≤ 1.2× the floor's", "rss_bytes", "floor", 1.2, 1.0 / 1024, "%.1f KiB"},
	{"RSS per cluster ≤ 0.5× ClusterCache's", "rss_bytes", "clustercache", 0.5, 1.0 / 1024, "%.1f KiB"},
	{"idle CPU per cluster ≤ ClusterCache's", "idle_cpu_s_per_min", "clustercache", 1, 1000, "%.2f ms/min"},
	{"idle requests per cluster ≤ ClusterCache's", "idle_requests_per_s", "clustercache", 1, 1, "%.4f/s"},
}

// writeTargets adds to b, when rep has clusterpool and a peer a target is
// set against, the table of issue 27's targets: the per-cluster ones from
// rep's fits, and the time to connect all at each fleet size.
func writeTargets(b *strings.Builder, rep scaleReport) {
	slope := map[[2]string]float64{}
	for _, f := range rep.Fits {
		slope[[2]string{f.Strategy, f.Figure}] = f.Slope
	}
	var rows []string
	for _, t := range scaleTargets {
		cp, ok1 := slope[[2]string{"clusterpool", t.Figure}]
		other, ok2 := slope[[2]string{t.Against, t.Figure}]
		if !ok1 || !ok2 {
			continue
		}
		bound := t.Factor * other
		rows = append(rows, fmt.Sprintf("| %s | "+t.Format+" | "+t.Format+" (%s "+t.Format+") | %s |",
			t.Name, cp*t.Unit, bound*t.Unit, t.Against, other*t.Unit, yesNo(cp <= bound)))
	}
	connect := map[[2]any]float64{}
	for _, r := range rep.Results {
		connect[[2]any{r.Strategy, r.Clusters}] = r.ConnectS
	}
	for _, n := range rep.Options.Sizes {
		cp, ok1 := connect[[2]any{"clusterpool", n}]
		cc, ok2 := connect[[2]any{"clustercache", n}]
		if ok1 && ok2 && cp >= 0 && cc >= 0 {
			rows = append(rows, fmt.Sprintf("| time to connect all %d ≤ ClusterCache's | %.1f s | %.1f s | %s |", n, cp, cc, yesNo(cp <= cc)))
		}
	}
	if len(rows) == 0 {
		return
	}
	b.WriteString("Issue 27's targets for clusterpool (per cluster: the slopes above):\n\n| target | clusterpool | bound | met |\n|---|---|---|---|\n")
	b.WriteString(strings.Join(rows, "\n"))
	b.WriteString("\n\n")
}

func yesNo(ok bool) string {
	if ok {
		return "yes"
	}
	return "no"
}
