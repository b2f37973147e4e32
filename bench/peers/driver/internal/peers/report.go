package peers

import (
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"

	"github.com/clusterpool/clusterpool/bench/peers/driver/internal/fleet"
)

// writeReal prints the real figures as one markdown table.
func writeReal(w io.Writer, results []Result) error {
	var b strings.Builder
	b.WriteString("| scenario | strategy | all reconciled | healthy/s | p50 ms | p99 ms | ok p99 ms | blocked worker-s | requeues | errors | dials (faulty) | recovery mean / max s | RSS MiB (peak) | goroutines |\n")
	b.WriteString("|---|---|---|---|---|---|---|---|---|---|---|---|---|---|\n")
	for _, r := range results {
		f := r.Figures
		fmt.Fprintf(&b, "| %s | %s %s | %s | %.1f | %.0f | %.0f | %.0f | %.1f | %d | %d | %d (%d) | %s | %.0f (%.0f) | %d |\n",
			r.Scenario, r.Strategy, f.Version, reached(f.AllReconciled, f.Seconds), f.HealthyPerSec, f.P50Ms, f.P99Ms, f.OKP99Ms,
			f.BlockedWorkerSeconds, f.Requeues, f.Errors, r.Dials, r.FaultyDials, recoveryCell(r),
			fleet.MiB(f.RSSBytes), fleet.MiB(f.PeakRSSBytes), f.Goroutines)
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// writeModel prints model against real, one row per figure, marking
// differences over 20 %.
func writeModel(w io.Writer, rows []comparison) error {
	var b strings.Builder
	b.WriteString("| scenario | strategy | figure | model | real | model ÷ real | |\n|---|---|---|---|---|---|---|\n")
	for _, c := range rows {
		ratio := "–"
		if c.Real > 0 && c.Model >= 0 {
			ratio = fmt.Sprintf("%.2f×", c.Model/c.Real)
		}
		mark := ""
		if c.Off() {
			mark = "**> 20 %**"
		}
		fmt.Fprintf(&b, "| %s | %s | %s | %s | %s | %s | %s |\n", c.Scenario, c.Strategy, c.Figure,
			num(c.Model), num(c.Real), ratio, mark)
	}
	_, err := io.WriteString(w, b.String())
	return err
}

func reached(v, run float64) string {
	if v < 0 {
		return fmt.Sprintf("> %.0f s", run)
	}
	return fmt.Sprintf("%.1f s", v)
}

func recoveryCell(r Result) string {
	switch {
	case r.Scenario != "recovery":
		return ""
	case r.RecoveryMean < 0:
		return "never"
	}
	return fmt.Sprintf("%.1f / %.1f", r.RecoveryMean, r.RecoveryMax)
}

// num formats a figure; negative ones are times never reached.
func num(v float64) string {
	if v < 0 {
		return "not reached"
	}
	if v == float64(int64(v)) {
		return fmt.Sprint(int64(v))
	}
	return fmt.Sprintf("%.1f", v)
}

// timingOrder lists the timings a peer records (-timings), in the order of
// a reconcile: its phases, then client-go's view of each workload request.
var timingOrder = []string{"mgmt_read", "client_get", "write", "sleep_overshoot", "ratelimit", "request", "request_less_ratelimit", "roundtrip", "guard_and_decode"}

// writeTimings prints the timings of the results that have some.
func writeTimings(w io.Writer, results []Result) error {
	var b strings.Builder
	for _, r := range results {
		if len(r.Figures.Timings) == 0 {
			continue
		}
		if b.Len() == 0 {
			b.WriteString("\nTimings (ms): phases of successful reconciles; client-go's rate-limiter wait and whole request per workload ConfigMap request; request_less_ratelimit: the request less that wait (transport, server, decoding); roundtrip: on the wire, inside clusterpool's request guard; guard_and_decode: request_less_ratelimit less roundtrip, per request\n\n")
			b.WriteString("| scenario | strategy | timing | n | mean | p50 | p90 | p99 | max |\n|---|---|---|---|---|---|---|---|---|\n")
		}
		names := slices.Sorted(maps.Keys(r.Figures.Timings))
		slices.SortStableFunc(names, func(a, b string) int { return index(a) - index(b) })
		for _, name := range names {
			d := r.Figures.Timings[name]
			fmt.Fprintf(&b, "| %s | %s | %s | %d | %.1f | %.1f | %.1f | %.1f | %.1f |\n", r.Scenario, r.Strategy, name, d.N, d.Mean, d.P50, d.P90, d.P99, d.Max)
		}
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// index is name's place in timingOrder (unknown names last).
func index(name string) int {
	if i := slices.Index(timingOrder, name); i >= 0 {
		return i
	}
	return len(timingOrder)
}
