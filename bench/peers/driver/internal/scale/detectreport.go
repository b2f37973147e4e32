package scale

import (
	"fmt"
	"slices"
	"strings"
)

// writeDetection adds to b the dead-cluster detection table: per fleet
// size and fault class, each detecting peer's p50 and max over the killed
// clusters.
func writeDetection(b *strings.Builder, rep scaleReport) {
	var peers []string
	for _, r := range rep.Results {
		if len(r.Detections) > 0 && !slices.Contains(peers, r.Strategy) {
			peers = append(peers, r.Strategy)
		}
	}
	if len(peers) == 0 {
		return
	}
	o := rep.Options
	fmt.Fprintf(b, "Dead-cluster detection: after the load window %d clusters per fault class are killed; seconds from the fault "+
		"until the peer reported the cluster not connected (asked every %s), p50 / max over them (bound %s):\n\n",
		o.PerFault, sampleEvery, o.DetectWithin)
	b.WriteString("| clusters | fault | " + strings.Join(peers, " | ") + " |\n|---|---|" + strings.Repeat("---|", len(peers)) + "\n")
	for _, n := range o.Sizes {
		for _, class := range faultClasses {
			cells := make([]string, len(peers))
			found := false
			for i, s := range peers {
				ds := detectionsOf(rep.Results, s, n, class)
				found = found || len(ds) > 0
				cells[i] = detectCell(ds)
			}
			if found {
				fmt.Fprintf(b, "| %d | %s | %s |\n", n, faultNames[class], strings.Join(cells, " | "))
			}
		}
	}
	b.WriteString("\n")
}

// detectionsOf are strategy s's detections of fault class at fleet size n.
func detectionsOf(results []scaleResult, s string, n int, class string) []detection {
	var out []detection
	for _, r := range results {
		if r.Strategy != s || r.Clusters != n {
			continue
		}
		for _, d := range r.Detections {
			if d.Fault == class {
				out = append(out, d)
			}
		}
	}
	return out
}

// detectTimes are the detection times of ds that were reported, sorted,
// and how many were not.
func detectTimes(ds []detection) (times []float64, missed int) {
	for _, d := range ds {
		if d.DetectS < 0 {
			missed++
			continue
		}
		times = append(times, d.DetectS)
	}
	slices.Sort(times)
	return times, missed
}

// detectCell is "p50 / max" of ds's detection times, a cluster never
// reported counting as the longest ("never").
func detectCell(ds []detection) string {
	if len(ds) == 0 {
		return ""
	}
	times, missed := detectTimes(ds)
	at := func(i int) string {
		if i >= len(times) {
			return "never"
		}
		return fmt.Sprintf("%.1f", times[i])
	}
	cell := at(len(ds)/2) + " / " + at(len(ds)-1)
	if missed > 0 {
		cell += fmt.Sprintf(" (%d of %d never)", missed, len(ds))
	}
	return cell
}
