package main

import (
	"fmt"
	"io"
	"strings"
)

// writeReal prints the real figures as one markdown table.
func writeReal(w io.Writer, results []result) error {
	var b strings.Builder
	b.WriteString("| scenario | strategy | all reconciled | healthy/s | p50 ms | p99 ms | ok p99 ms | blocked worker-s | requeues | errors | dials (faulty) | recovery mean / max s | RSS MiB (peak) | goroutines |\n")
	b.WriteString("|---|---|---|---|---|---|---|---|---|---|---|---|---|---|\n")
	for _, r := range results {
		f := r.Figures
		fmt.Fprintf(&b, "| %s | %s %s | %s | %.1f | %.0f | %.0f | %.0f | %.1f | %d | %d | %d (%d) | %s | %.0f (%.0f) | %d |\n",
			r.Scenario, r.Strategy, f.Version, reached(f.AllReconciled, f.Seconds), f.HealthyPerSec, f.P50Ms, f.P99Ms, f.OKP99Ms,
			f.BlockedWorkerSeconds, f.Requeues, f.Errors, r.Dials, r.FaultyDials, recoveryCell(r),
			mib(f.RSSBytes), mib(f.PeakRSSBytes), f.Goroutines)
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

func recoveryCell(r result) string {
	switch {
	case r.Scenario != "recovery":
		return ""
	case r.RecoveryMean < 0:
		return "never"
	}
	return fmt.Sprintf("%.1f / %.1f", r.RecoveryMean, r.RecoveryMax)
}

func mib(b int64) float64 { return float64(b) / (1 << 20) }

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
