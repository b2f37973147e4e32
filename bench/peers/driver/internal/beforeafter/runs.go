package beforeafter

import (
	"fmt"
	"math"
	"path/filepath"
	"slices"
	"strings"

	"github.com/clusterpool/clusterpool/bench/peers/driver/internal/fleet"
	"github.com/clusterpool/clusterpool/bench/peers/driver/internal/mhc"
	"github.com/clusterpool/clusterpool/bench/peers/driver/internal/peers"
	"github.com/clusterpool/clusterpool/bench/peers/protocol"
)

// peerFigures are the bench-peers figures compared, as writeReal prints
// them: format, higher better, the value (NaN: never reached).
var peerFigures = []struct {
	name, format string
	higherBetter bool
	value        func(peers.Result) float64
}{
	{"all reconciled, s", "%.1f", false, func(r peers.Result) float64 { return reachedOrNaN(r.Figures.AllReconciled) }},
	{"healthy reconciles/s", "%.1f", true, func(r peers.Result) float64 { return r.Figures.HealthyPerSec }},
	{"p50 ms", "%.0f", false, func(r peers.Result) float64 { return r.Figures.P50Ms }},
	{"p99 ms", "%.0f", false, func(r peers.Result) float64 { return r.Figures.P99Ms }},
	{"ok p99 ms", "%.0f", false, func(r peers.Result) float64 { return r.Figures.OKP99Ms }},
	{"blocked worker-s", "%.1f", false, func(r peers.Result) float64 { return r.Figures.BlockedWorkerSeconds }},
	{"requeues", "%.0f", false, func(r peers.Result) float64 { return float64(r.Figures.Requeues) }},
	{"errors", "%.0f", false, func(r peers.Result) float64 { return float64(r.Figures.Errors) }},
	{"dials", "%.0f", false, func(r peers.Result) float64 { return float64(r.Dials) }},
	{"dials to faulty clusters", "%.0f", false, func(r peers.Result) float64 { return float64(r.FaultyDials) }},
	{"RSS MiB", "%.0f", false, func(r peers.Result) float64 { return fleet.MiB(r.Figures.RSSBytes) }},
	{"peak RSS MiB", "%.0f", false, func(r peers.Result) float64 { return fleet.MiB(r.Figures.PeakRSSBytes) }},
	{"goroutines", "%.0f", false, func(r peers.Result) float64 { return float64(r.Figures.Goroutines) }},
}

// reachedOrNaN is v, or NaN for a time never reached (negative).
func reachedOrNaN(v float64) float64 {
	if v < 0 {
		return math.NaN()
	}
	return v
}

// peersSection is bench-peers: one run of the driver (peers.json) with
// the before tree's clusterpool peer beside this tree's.
func peersSection(dir string) (baSection, error) {
	s := baSection{Bar: "make bench-peers", Raw: []string{"peers.md", "peers.json"}}
	var rep peers.Report
	if err := protocol.ReadReport(filepath.Join(dir, "peers.json"), &rep); err != nil {
		return missing(s, err)
	}
	var order []string
	for _, r := range rep.Results {
		if !slices.Contains(order, r.Strategy) {
			order = append(order, r.Strategy)
		}
	}
	s.Measured = fmt.Sprintf("One run on one fleet (%s): %d Clusters (%d workload apiservers) × %d objects; the peers in turn on each scenario: %s; clusterpool of each tree. Raw run:",
		rep.Date, rep.Config.Clusters, rep.APIServers, rep.Config.Objects, strings.Join(order, ", "))
	for _, after := range rep.Results {
		i := slices.IndexFunc(rep.Results, func(r peers.Result) bool { return r.Scenario == after.Scenario && r.Strategy == beforeLabel })
		if after.Strategy != "clusterpool" || i < 0 {
			continue
		}
		before := rep.Results[i]
		for _, f := range peerFigures {
			s.Rows = append(s.Rows, newRow(after.Scenario+": "+f.name, f.format, f.value(before), f.value(after), f.higherBetter, false))
		}
		if after.Scenario == "recovery" {
			s.Rows = append(s.Rows, newRow("recovery: recovery mean, s", "%.1f", reachedOrNaN(before.RecoveryMean), reachedOrNaN(after.RecoveryMean), false, false),
				newRow("recovery: recovery max, s", "%.1f", reachedOrNaN(before.RecoveryMax), reachedOrNaN(after.RecoveryMax), false, false))
		}
	}
	if len(s.Rows) == 0 {
		s.Missing = "the run has no " + beforeLabel + " peer beside clusterpool"
	}
	return s, nil
}

// mhcSection is bench-mhc: one run of the driver (mhc.json) with the
// before tree's drop-in as runs of their own beside this tree's.
func mhcSection(dir string) (baSection, error) {
	s := baSection{Bar: "make bench-mhc", Raw: []string{"mhc.md", "mhc.json"}}
	var rep mhc.Report
	if err := protocol.ReadReport(filepath.Join(dir, "mhc.json"), &rep); err != nil {
		return missing(s, err)
	}
	var order []string
	for _, r := range rep.Results {
		order = append(order, r.Cache)
	}
	s.Measured = fmt.Sprintf("One run on one fleet (%s): %d Clusters × %d Machines, %.0f %% dead, %.0f %% flapping, %s per run, in the order %s; the mean of each drop-in's runs (before: the before tree's, after: adapter). Raw run:",
		rep.Date, rep.Clusters, mhc.MachinesPer(rep), rep.Dead*100, rep.Flapping*100, rep.Duration, strings.Join(order, ", "))
	means := mhc.MeanByCache(mhc.Rows(rep.Results), rep.Results, beforeLabel, "adapter")
	if means == nil {
		s.Missing = "the run has no " + beforeLabel + " and adapter runs"
		return s, nil
	}
	for _, row := range means {
		s.Rows = append(s.Rows, newRow(row.Name, row.Format, row.Values[0], row.Values[1], row.HigherBetter, row.Info))
	}
	return s, nil
}
