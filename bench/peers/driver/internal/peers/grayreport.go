package peers

import (
	"fmt"
	"io"
	"slices"
	"strings"
	"time"
)

// writeGray prints the gray run's report: the setup, one table of every
// figure (a row per class and figure, a column per strategy, each bar's
// verdict beside its number), the n/a reasons and each run's basics.
func writeGray(w io.Writer, rep grayReport) error {
	var b strings.Builder
	fmt.Fprintf(&b, "Gray run (%s, %s): %d Clusters (%d workload apiservers) × %d objects, %d workers, %s of work per reconcile, saturated; "+
		"every Cluster behind a grayproxy; each strategy runs a baseline (no fault) and a gray run, each %s: %s of warm-up, then %s of faults. "+
		"Classes (seed %d): %.0f %% each slow (%g× its apiserver's time), 40 %% errors and throttled (%.0f %% of answers 429, Retry-After %s), one at 60 %% and one at 20 %% errors.\n\n",
		rep.Date, rep.Machine, rep.Config.Clusters, rep.APIServers, rep.Config.Objects, rep.Config.Workers, rep.Config.Work,
		(rep.Warmup + rep.For).Round(time.Second), rep.Warmup, rep.For, rep.Config.Seed, rep.Fraction*100, rep.Faults.SlowFactor,
		rep.Faults.ThrottleRate*100, rep.Faults.RetryAfter)
	b.WriteString("| class | figure | bar |")
	for _, s := range rep.Strategies {
		fmt.Fprintf(&b, " %s |", s)
	}
	b.WriteString("\n|---|---|---|" + strings.Repeat("---|", len(rep.Strategies)) + "\n")
	var why []string
	for _, row := range grayRows(rep.Figures) {
		fmt.Fprintf(&b, "| %s | %s | %s |", row.Class, row.Figure, row.Bar)
		for _, s := range rep.Strategies {
			cell := ""
			if i := slices.IndexFunc(rep.Figures, func(f grayFigure) bool { return f.Strategy == s && f.Class == row.Class && f.Figure == row.Figure }); i >= 0 {
				f := rep.Figures[i]
				cell = grayCell(f)
				if f.Why != "" && !slices.Contains(why, s+": "+f.Why) {
					why = append(why, s+": "+f.Why)
				}
			}
			fmt.Fprintf(&b, " %s |", cell)
		}
		b.WriteString("\n")
	}
	for _, y := range why {
		fmt.Fprintf(&b, "\nn/a — %s.", y)
	}
	b.WriteString("\n\n| strategy | run | healthy/s | ok p99 ms | requeues | errors | gray Clusters' requests sent / reached (faulted) |\n|---|---|---|---|---|---|---|\n")
	for _, r := range rep.Runs {
		var sent, reached, faulted uint64
		for _, c := range r.Clusters {
			sent += r.Figures.RequestsSent[c.Host]
			reached += c.Reached
			faulted += c.Faulted
		}
		fmt.Fprintf(&b, "| %s %s | %s | %.1f | %.0f | %d | %d | %d / %d (%d) |\n", r.Strategy, r.Figures.Version, r.Phase,
			r.Figures.HealthyPerSec, r.Figures.OKP99Ms, r.Figures.Requeues, r.Figures.Errors, sent, reached, faulted)
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// grayRows are the report's rows: each class and figure once, in the
// order the figures came.
func grayRows(figs []grayFigure) []grayFigure {
	var rows []grayFigure
	for _, f := range figs {
		if !slices.ContainsFunc(rows, func(r grayFigure) bool { return r.Class == f.Class && r.Figure == f.Figure }) {
			rows = append(rows, f)
		}
	}
	return rows
}

// grayCell formats one figure with its verdict.
func grayCell(f grayFigure) string {
	var v string
	switch {
	case f.Verdict == verdictNA:
		return "n/a"
	case f.Value < 0 && f.Figure == figFound:
		v = "never"
	case f.Value < 0:
		v = "–"
	case f.Figure == figShare:
		v = fmt.Sprintf("%.1f %%", f.Value*100)
	case f.Figure == figP99Ratio || f.Figure == figRate:
		v = fmt.Sprintf("%.3f", f.Value)
	default:
		v = fmt.Sprintf("%.1f", f.Value)
	}
	switch f.Verdict {
	case verdictMet:
		return v + " met"
	case verdictNotMet:
		return v + " **NOT met**"
	}
	return v
}
