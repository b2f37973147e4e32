package chaos

import (
	"fmt"
	"strings"
)

// writeGray prints the gray classes' table: per class and cache, the
// judged faults, the cuts while they were on, and the class's bar (issue
// 43): throttled and errors-20 never cut off (a verdict), errors-60 found
// within foundWithin (reported: neither cache promises it).
func writeGray(b *strings.Builder, res []chaosResult) {
	if !anyGray(res) {
		return
	}
	fmt.Fprintf(b, "\nGray faults (issue 43; each cluster's gray proxies: 10 times slower, 20 %% or 60 %% of the answers 500/503, half of them 429 with Retry-After): the faults judged (no other fault on the cluster while on, nor ending within %.0f s before; not judged), their total length, the cuts (the cluster no longer connected) that began while one was on; throttled and errors-20: clusters cut more than once per %.0f min of fault (bar: none); errors-60: faults found, a cut within %.0f s of the start (bar: every one; not a verdict: both caches cut a cluster off only after 5 failed probes in a row, 10 s apart), and the latest\n\n",
		grayQuiet.Seconds(), cutEvery.Minutes(), foundWithin.Seconds())
	b.WriteString("| gray class |")
	for _, r := range res {
		fmt.Fprintf(b, " %s: judged (not) | fault s | cuts | bar |", cacheTitle(r.Cache))
	}
	b.WriteString("\n|---|" + strings.Repeat("---|---|---|---|", len(res)) + "\n")
	for _, c := range chaosClasses {
		if !c.Gray {
			continue
		}
		row := "| " + c.Name + " |"
		for _, r := range res {
			g, _ := findGray(r.Gray, c.Name)
			row += fmt.Sprintf(" %d (%d) | %.0f | %d | %s |", g.Judged, g.Shared, g.Seconds, g.Cuts, grayBar(g))
		}
		b.WriteString(row + "\n")
	}
}

// grayBar says how g's class fared against its bar ("–" without one).
func grayBar(g grayStats) string {
	switch {
	case g.Judged == 0:
		return "–"
	case neverCutOff(g.Class):
		return countOrList(g.CutOff) + " cut off"
	case g.Class == faultErrors60:
		s := fmt.Sprintf("found %d of %d", g.Found, g.Judged)
		if g.FoundMax >= 0 {
			s += fmt.Sprintf(", latest %.1f s", g.FoundMax)
		}
		return s
	}
	return "–"
}

// anyGray reports whether any result has gray faults.
func anyGray(res []chaosResult) bool {
	for _, r := range res {
		if len(r.Gray) > 0 {
			return true
		}
	}
	return false
}

// findGray returns class's gray figures.
func findGray(gs []grayStats, class string) (grayStats, bool) {
	for _, g := range gs {
		if g.Class == class {
			return g, true
		}
	}
	return grayStats{Class: class, FoundMax: -1}, false
}
