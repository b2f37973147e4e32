package peers

import (
	"fmt"
	"slices"

	"github.com/clusterpool/clusterpool/bench/peers/driver/internal/fleet"
	"github.com/clusterpool/clusterpool/bench/peers/protocol"
)

// grayRun is one peer run of the gray experiment: its figures and what the
// grayproxies of its gray Clusters counted.
type grayRun struct {
	Strategy string `json:"strategy"`
	// Phase is "baseline" (every proxy passes) or "gray" (the classes'
	// faults from FaultsFromUnixMs on).
	Phase string `json:"phase"`
	// FaultsFromUnixMs is when the faults started (the baseline: when they
	// would have): the peer's -measure-from.
	FaultsFromUnixMs int64            `json:"faults_from_unix_ms"`
	Figures          protocol.Figures `json:"figures"`
	Clusters         []grayCluster    `json:"gray_clusters"`
}

// grayCluster is one gray Cluster of a run.
type grayCluster struct {
	Name  string          `json:"name"`
	Class fleet.GrayClass `json:"class"`
	// Host is its proxy's host:port (the key of Figures.RequestsSent).
	Host string `json:"host"`
	// Reached and Faulted: requests its proxy received from the faults'
	// start (the baseline: from when they would have started) until the
	// peer exited, and of those the ones the proxy answered with the fault
	// itself. Every one reached the cluster, which the proxy stands for.
	Reached uint64 `json:"reached"`
	Faulted uint64 `json:"faulted"`
}

// The verdicts of a figure with a bar.
const (
	verdictMet    = "met"
	verdictNotMet = "NOT met"
	verdictNA     = "n/a"
)

// grayFigure is one figure of one strategy for one class of Clusters.
type grayFigure struct {
	Strategy string `json:"strategy"`
	// Class is "healthy" or a gray class.
	Class  string `json:"class"`
	Figure string `json:"figure"`
	// Value is the figure (for a class of several Clusters, the worst of
	// them); -1 for a time never reached.
	Value float64 `json:"value"`
	// Bar is issue 43's bar, "" if the figure has none for the class;
	// Verdict is met, NOT met, or n/a (Why says why) for a bar.
	Bar     string `json:"bar,omitempty"`
	Verdict string `json:"verdict,omitempty"`
	Why     string `json:"why,omitempty"`
}

// The figures' names.
const (
	figP99Base   = "healthy ok p99 ms, baseline"
	figP99Gray   = "healthy ok p99 ms, gray"
	figP99Ratio  = "healthy ok p99, gray ÷ baseline"
	figRate      = "healthy reconciles/s, gray ÷ baseline"
	figFound     = "found after s"
	figOpens     = "breaker opens per 5 min"
	figCuts      = "disconnects per 5 min"
	figShare     = "share of requests sent that reached it"
	noBreakerWhy = "no circuit breaker: its cut-off is a disconnect (next row)"
)

// Issue 43's bars.
const (
	barRatio = 1.10 // healthy p99, gray ÷ baseline, at most
	barFound = 30.0 // s until the 60 %-error cluster is found, at most
	barCuts  = 1.0  // opens (disconnects) per 5 min, at most
	barShare = 0.95 // share of requests that reach it, at least
)

// grayFigures computes every figure of each strategy from its baseline and
// gray runs (a strategy missing either is left out).
func grayFigures(strategies []string, runs []grayRun) []grayFigure {
	var out []grayFigure
	for _, s := range strategies {
		base, gray, ok := runPair(runs, s)
		if !ok {
			continue
		}
		out = append(out, healthyFigures(s, base, gray)...)
		for _, class := range fleet.GrayClasses {
			out = append(out, classFigures(s, class, gray)...)
		}
	}
	return out
}

// runPair finds strategy's baseline and gray runs.
func runPair(runs []grayRun, strategy string) (base, gray grayRun, ok bool) {
	var found int
	for _, r := range runs {
		switch {
		case r.Strategy != strategy:
		case r.Phase == "baseline":
			base, found = r, found|1
		case r.Phase == "gray":
			gray, found = r, found|2
		}
	}
	return base, gray, found == 3
}

// healthyFigures are the healthy Clusters' successful-reconcile p99s and
// their ratio, gray ÷ baseline (bar: at most 1.10), and the ratio of their
// successful reconciles per second over the whole run (no bar: what the
// p99 of the reconciles that did run does not show).
func healthyFigures(s string, base, gray grayRun) []grayFigure {
	b, g := base.Figures.HealthyOKP99Ms, gray.Figures.HealthyOKP99Ms
	ratio := grayFigure{Strategy: s, Class: "healthy", Figure: figP99Ratio, Value: -1, Bar: fmt.Sprintf("≤ %.2f", barRatio)}
	if b > 0 {
		ratio.Value = g / b
		ratio.Verdict = verdict(ratio.Value <= barRatio)
	} else {
		ratio.Verdict, ratio.Why = verdictNA, "no successful healthy reconcile in the baseline"
	}
	rate := grayFigure{Strategy: s, Class: "healthy", Figure: figRate, Value: -1}
	if base.Figures.HealthyPerSec > 0 {
		rate.Value = gray.Figures.HealthyPerSec / base.Figures.HealthyPerSec
	}
	return []grayFigure{
		{Strategy: s, Class: "healthy", Figure: figP99Base, Value: b},
		{Strategy: s, Class: "healthy", Figure: figP99Gray, Value: g},
		ratio, rate,
	}
}

// classFigures are the figures of the gray run's Clusters of class: for
// each, the worst over its Clusters. Bars: the 60 %-error Cluster found
// within 30 s; throttled and 20 %-error Clusters opened (disconnected) at
// most once per 5 min, and at least 95 % of the requests sent to them
// reached them.
func classFigures(s string, class fleet.GrayClass, run grayRun) []grayFigure {
	var found, opens, cuts, share []float64
	a := run.Figures.Availability
	if a == nil {
		a = &protocol.Availability{}
	}
	from := run.FaultsFromUnixMs
	window := float64(run.Figures.StartUnixMs+int64(run.Figures.Seconds*1000)-from) / 1000
	for _, c := range run.Clusters {
		if c.Class != class {
			continue
		}
		detect := a.NotConnected[c.Name] // the cache stops serving it
		if a.BreakerOpen != nil {
			detect = a.BreakerOpen[c.Name] // its breaker opens
		}
		found = append(found, foundAfter(detect, from))
		opens = append(opens, perFiveMinutes(a.BreakerOpen[c.Name], from, window))
		cuts = append(cuts, perFiveMinutes(a.NotConnected[c.Name], from, window))
		share = append(share, reachedShare(c.Reached, run.Figures.RequestsSent[c.Host]))
	}
	if len(found) == 0 {
		return nil
	}
	never := class == fleet.GrayThrottled || class == fleet.GrayErrors20
	fig := func(name string, v float64) grayFigure {
		return grayFigure{Strategy: s, Class: string(class), Figure: name, Value: v}
	}
	f := []grayFigure{fig(figFound, worstTime(found)), fig(figOpens, slices.Max(opens)), fig(figCuts, slices.Max(cuts)),
		fig(figShare, slices.Min(share))}
	if class == fleet.GrayErrors60 {
		f[0].Bar, f[0].Verdict = fmt.Sprintf("≤ %.0f s", barFound), verdict(f[0].Value >= 0 && f[0].Value <= barFound)
	}
	if never {
		f[1].Bar, f[1].Verdict = fmt.Sprintf("≤ %.0f", barCuts), verdict(f[1].Value <= barCuts)
		f[2].Bar, f[2].Verdict = f[1].Bar, verdict(f[2].Value <= barCuts)
		f[3].Bar, f[3].Verdict = fmt.Sprintf("≥ %.0f %%", barShare*100), verdict(f[3].Value >= barShare)
		if f[3].Value < 0 {
			f[3].Verdict, f[3].Why = verdictNA, "the controller sent it nothing"
		}
	}
	if a.BreakerOpen == nil {
		f[1].Value, f[1].Verdict, f[1].Why = -1, verdictNA, noBreakerWhy
	}
	return f
}

func verdict(met bool) string {
	if met {
		return verdictMet
	}
	return verdictNotMet
}

// foundAfter is the time in seconds from from (Unix ms) until the first
// interval (of not connected, or breaker open) that started at or after
// it; -1 if none did.
func foundAfter(intervals [][2]int64, from int64) float64 {
	for _, iv := range intervals {
		if iv[0] >= from {
			return float64(iv[0]-from) / 1000
		}
	}
	return -1
}

// perFiveMinutes is the number of intervals that started at or after from,
// per 5 minutes of a window of windowS seconds.
func perFiveMinutes(intervals [][2]int64, from int64, windowS float64) float64 {
	if windowS <= 0 {
		return 0
	}
	n := 0
	for _, iv := range intervals {
		if iv[0] >= from {
			n++
		}
	}
	return float64(n) * 300 / windowS
}

// reachedShare is reached ÷ sent; -1 if nothing was sent.
func reachedShare(reached, sent uint64) float64 {
	if sent == 0 {
		return -1
	}
	return float64(reached) / float64(sent)
}

// worstTime is the longest of times, -1 (never) if any is.
func worstTime(times []float64) float64 {
	if slices.Contains(times, -1) {
		return -1
	}
	return slices.Max(times)
}
