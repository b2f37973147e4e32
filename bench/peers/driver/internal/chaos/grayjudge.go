package chaos

import (
	"fmt"
	"maps"
	"math"
	"slices"
	"time"
)

// Issue 43's bars on the gray classes, and what a judged gray fault is.
const (
	// foundWithin: a 60 %-error cluster is found (cut off) within this of
	// its fault's start. Reported, not a verdict: both caches cut a
	// cluster off only after 5 failed health probes in a row, 10 s apart
	// (docs/clusterapi.md), and neither promises it.
	foundWithin = 30 * time.Second
	// cutEvery: a throttled or 20 %-error cluster is cut off at most once
	// per cutEvery of such a fault on it (and once in a shorter one).
	cutEvery = 5 * time.Minute
	// grayQuiet: a gray fault is judged only if no other fault held its
	// cluster from its start until its end, nor ended within grayQuiet
	// before its start (a cut then may be the other fault's).
	grayQuiet = 30 * time.Second
)

// grayStats are one gray class's figures on one cache, from its judged
// faults (Judged; Shared: those another fault overlapped, not judged).
type grayStats struct {
	Class  string `json:"class"`
	Judged int    `json:"judged"`
	Shared int    `json:"shared"`
	// Seconds: the judged faults' total length; Cuts: the cuts (the
	// cluster no longer connected) that began while one was on.
	Seconds float64 `json:"fault_s"`
	Cuts    int     `json:"cuts"`
	// CutOff: for throttled and errors-20 (issue 43: never cut off), each
	// cluster cut more than once per started cutEvery of the class's
	// judged faults on it.
	CutOff []string `json:"cut_off,omitempty"`
	// Found: the judged faults during which the cluster was cut within
	// foundWithin of their start; FoundMax: the latest such first cut,
	// seconds after its fault's start (-1: none was).
	Found    int     `json:"found"`
	FoundMax float64 `json:"found_max_s"`
}

// neverCutOff reports whether class has issue 43's never-cut-off bar.
func neverCutOff(class string) bool { return class == faultThrottled || class == faultErrors20 }

// grayTable computes each gray class's figures (in the registry's order,
// those with faults) from the run's events and when each cluster was cut
// (seconds since the fault window opened, sorted).
func grayTable(events []faultEvent, cuts map[string][]float64) []grayStats {
	var out []grayStats
	for _, c := range chaosClasses {
		if !c.Gray {
			continue
		}
		st := grayStats{Class: c.Name, FoundMax: -1}
		type tally struct {
			seconds float64
			cuts    int
		}
		per := map[string]*tally{}
		for _, e := range events {
			if e.Class != c.Name || e.Err != "" || len(e.Clusters) != 1 {
				continue
			}
			cl := e.Clusters[0]
			if shared(events, e, cl) {
				st.Shared++
				continue
			}
			in := within(cuts[cl], e.Start, e.End)
			st.Judged++
			st.Seconds += e.End - e.Start
			st.Cuts += len(in)
			if per[cl] == nil {
				per[cl] = &tally{}
			}
			per[cl].seconds += e.End - e.Start
			per[cl].cuts += len(in)
			if len(in) > 0 && in[0]-e.Start <= foundWithin.Seconds() {
				st.Found++
				st.FoundMax = max(st.FoundMax, in[0]-e.Start)
			}
		}
		if st.Judged+st.Shared == 0 {
			continue
		}
		for _, cl := range slices.Sorted(maps.Keys(per)) {
			allowed := max(1, int(math.Ceil(per[cl].seconds/cutEvery.Seconds())))
			if neverCutOff(c.Name) && per[cl].cuts > allowed {
				st.CutOff = append(st.CutOff, fmt.Sprintf("%s: %s, %d cuts in %.0f s of fault", cl, c.Name, per[cl].cuts, per[cl].seconds))
			}
		}
		out = append(out, st)
	}
	return out
}

// shared reports whether another of events held cluster while e was on,
// or ended within grayQuiet before e's start.
func shared(events []faultEvent, e faultEvent, cluster string) bool {
	return slices.ContainsFunc(events, func(o faultEvent) bool {
		return o.ID != e.ID && slices.Contains(o.Clusters, cluster) && o.Start <= e.End && o.End+grayQuiet.Seconds() >= e.Start
	})
}

// within returns those of sorted ts in [from, to].
func within(ts []float64, from, to float64) []float64 {
	i, _ := slices.BinarySearch(ts, from)
	j := i
	for j < len(ts) && ts[j] <= to {
		j++
	}
	return ts[i:j]
}

// cutOffOf lists every gray class's clusters cut off past the bar.
func cutOffOf(gray []grayStats) []string {
	var out []string
	for _, g := range gray {
		out = append(out, g.CutOff...)
	}
	return out
}
