package chaos

import (
	"fmt"
	"io"
	"slices"
	"strings"
	"time"
)

// writeChaos prints a chaos run's tables: time back per fault class, the
// caches side by side; the verdicts; where the drop-in is behind the stock
// cache; the clusters past their bound.
func writeChaos(out io.Writer, rep chaosReport) error {
	var b strings.Builder
	o := rep.Options
	fmt.Fprintf(&b, "Chaos run of %s (%s): %d Clusters on %d workload apiservers, %d Machines each; %d faults over %s, seed %d; %.0f s wall\n\n",
		rep.Date, rep.Machine, rep.Clusters, rep.APIServers, o.Machines, len(rep.Schedule), time.Duration(o.Duration), o.Seed, rep.Wall)
	if len(rep.Results) > 1 && !slices.ContainsFunc(rep.Results, func(r chaosResult) bool { return r.Note != "" }) {
		b.WriteString("The caches ran at once, each in its own manager (Cluster API v1.14.2's MachineHealthCheck and Machine reconcilers) with a management apiserver of its own holding the same objects, on one workload fleet (the same apiservers; each Cluster with a fault proxy and a gray proxy per cache); every fault was applied to all of them at the same instant.\n\n")
	}
	for _, r := range rep.Results {
		fmt.Fprintf(&b, "- bound on time back, %s: %.0f s (%s)", cacheTitle(r.Cache), r.Bound.Seconds, r.Bound.Derived)
		if r.Bound.Mgmt > 0 {
			fmt.Fprintf(&b, "; after a management restart: %.0f s (%s)", r.Bound.Mgmt, r.Bound.MgmtDerived)
		}
		if r.Note != "" {
			b.WriteString(". " + r.Note)
		}
		b.WriteString("\n")
	}
	b.WriteString("\nTime back (s): from a fault's end (or the end of the faults overlapping it on that cluster) until the cluster's MachineHealthCheck and each of its Machines have reconciled successfully (a Machine: a reconcile of the Machine reconciler that listed its Node through the cluster's client); samples, then p50 / p99 / max; past bound\n\n")
	b.WriteString("| fault class |")
	for _, r := range rep.Results {
		fmt.Fprintf(&b, " %s: samples (interrupted) | p50 / p99 / max | past bound |", cacheTitle(r.Cache))
	}
	b.WriteString("\n|---|")
	b.WriteString(strings.Repeat("---|---|---|", len(rep.Results)))
	b.WriteString("\n")
	for _, class := range classOrder() {
		row := "| " + class + " |"
		any := false
		for _, r := range rep.Results {
			st, ok := findClass(r.Classes, class)
			any = any || ok
			row += fmt.Sprintf(" %d (%d) | %s / %s / %s | %d |", st.Samples, st.Interrupted, secs(st.P50, st.Samples), secs(st.P99, st.Samples), secs(st.Max, st.Samples), st.PastBound)
		}
		if any {
			b.WriteString(row + "\n")
		}
	}
	writeGray(&b, rep.Results)
	b.WriteString("\n| verdict |")
	for _, r := range rep.Results {
		b.WriteString(" " + cacheTitle(r.Cache) + " |")
	}
	b.WriteString("\n|---|" + strings.Repeat("---|", len(rep.Results)) + "\n")
	for _, row := range verdictRows() {
		b.WriteString("| " + row.name + " |")
		for _, r := range rep.Results {
			b.WriteString(" " + row.value(r) + " |")
		}
		b.WriteString("\n")
	}
	writeBehind(&b, rep.Results)
	for _, r := range rep.Results {
		writeGrown(&b, r)
		writePastBound(&b, r)
	}
	_, err := io.WriteString(out, b.String())
	return err
}

// findClass returns class's stats.
func findClass(cs []classStats, class string) (classStats, bool) {
	for _, c := range cs {
		if c.Class == class {
			return c, true
		}
	}
	return classStats{}, false
}

// secs prints seconds ("never" for -1, "" without samples).
func secs(s float64, n int) string {
	switch {
	case n == 0:
		return "–"
	case s < 0:
		return "never"
	}
	return fmt.Sprintf("%.1f", s)
}

// verdictRow is one row of the verdict table.
type verdictRow struct {
	name  string
	value func(chaosResult) string
}

func verdictRows() []verdictRow {
	return []verdictRow{
		{"time to connect the fleet before the first fault", func(r chaosResult) string { return fmt.Sprintf("%.1f s", r.Warmup) }},
		{"stuck: every live Cluster connected after the last fault", func(r chaosResult) string {
			if r.Verdicts.AllConnectedAfter < 0 {
				return fmt.Sprintf("**no**: %d not (%v)", len(r.Verdicts.Stuck), r.Verdicts.Stuck)
			}
			return fmt.Sprintf("yes, after %.1f s", r.Verdicts.AllConnectedAfter)
		}},
		{"stuck: deleted Clusters' connections, clients, series left", func(r chaosResult) string { return countOrList(r.Verdicts.Lingering) }},
		{"leaked: goroutines, fds, TCP, live heap (baseline → end)", func(r chaosResult) string {
			b, e := r.Verdicts.Baseline, r.Verdicts.End
			s := fmt.Sprintf("%d → %d, %d → %d, %d → %d, %.1f → %.1f MiB", b.Goroutines, e.Goroutines, b.FDs, e.FDs, b.TCP, e.TCP,
				float64(b.HeapBytes)/(1<<20), float64(e.HeapBytes)/(1<<20))
			if len(r.Verdicts.Leaked) > 0 {
				return "**leaked** " + s
			}
			return s
		}},
		{"crossed: Nodes read through another cluster's client; Machines whose nodeRef names another cluster's Node", func(r chaosResult) string { return fmt.Sprint(len(r.Verdicts.Crossed)) }},
		{"hung: calls past their timeout; panics; crashes", func(r chaosResult) string {
			return fmt.Sprintf("%d; %d; %d", len(r.Verdicts.Hung), r.Verdicts.Panics, len(r.Verdicts.Crashes))
		}},
		{"cut off: throttled or 20 %-error Clusters disconnected more than once per 5 min of fault", func(r chaosResult) string {
			return countOrList(r.Verdicts.CutOff)
		}},
		{"faults that failed to apply", func(r chaosResult) string {
			n := 0
			for _, e := range r.Events {
				if e.Err != "" {
					n++
				}
			}
			return fmt.Sprint(n)
		}},
	}
}

// countOrList prints "0" or the list, bold.
func countOrList(l []string) string {
	if len(l) == 0 {
		return "0"
	}
	return fmt.Sprintf("**%d**: %s", len(l), strings.Join(l, "; "))
}

// writeGrown lists, for a run that leaked, the goroutine stacks that grew
// most, and says why there are none if the profiles failed.
func writeGrown(b *strings.Builder, r chaosResult) {
	v := r.Verdicts
	if v.ProfileError != "" {
		fmt.Fprintf(b, "\n%s: no goroutine profiles: %s\n", cacheTitle(r.Cache), v.ProfileError)
	}
	if len(v.Leaked) == 0 || len(v.Grown) == 0 {
		return
	}
	fmt.Fprintf(b, "\n%s: the goroutine stacks that grew most from the baseline to the end:\n\n", cacheTitle(r.Cache))
	for _, g := range v.Grown {
		frames := strings.Split(g.Stack, " < ")
		fmt.Fprintf(b, "- %d → %d: %s\n", g.Baseline, g.End, strings.Join(frames[:min(4, len(frames))], " < "))
	}
}

// writePastBound lists r's clusters past the bound with their faults.
func writePastBound(b *strings.Builder, r chaosResult) {
	if len(r.PastBound) == 0 {
		return
	}
	fmt.Fprintf(b, "\n%s: %d (fault, cluster) samples past their bound:\n\n", cacheTitle(r.Cache), len(r.PastBound))
	for i, p := range r.PastBound {
		if i == 30 {
			fmt.Fprintf(b, "- … %d more (in the JSON)\n", len(r.PastBound)-30)
			break
		}
		fmt.Fprintf(b, "- %s after fault %d (%s), free at %.1f s (end of a %s): back %s, bound %.0f s; its faults:",
			p.Cluster, p.Fault, p.Class, p.Free, p.FreedBy, secs(p.Seconds, 1), r.Bound.For(p.FreedBy))
		for _, h := range p.History {
			fmt.Fprintf(b, " %d %s [%.1f, %.1f]", h.ID, h.Class, h.Start, h.End)
			if h.Err != "" {
				b.WriteString(" (failed: " + h.Err + ")")
			}
			b.WriteString(";")
		}
		b.WriteString("\n")
	}
}
