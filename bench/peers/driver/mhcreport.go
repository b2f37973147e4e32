package main

import (
	"fmt"
	"io"
	"maps"
	"math"
	"slices"
	"sort"
	"strings"

	"github.com/clusterpool/clusterpool/bench/peers/driver/internal/fleet"
)

// mhcRow is one figure of the -mhc table, one value per run; lower is
// better unless higherBetter, and neither if info. A NaN value is "not
// reached".
type mhcRow struct {
	name         string
	values       []float64
	format       string // fmt verb for a value
	higherBetter bool
	info         bool
}

// roleTimes returns the times of the keys of the clusters with role, the
// count expected (per cluster `per`) and how many were reached.
func roleTimes(r mhcResult, role string, per int, times map[string]float64, key func(cluster string, j int) string) (got []float64, want int) {
	for cluster, ro := range r.Roles {
		if ro != role {
			continue
		}
		for j := range per {
			want++
			if t, ok := times[key(cluster, j)]; ok {
				got = append(got, t)
			}
		}
	}
	sort.Float64s(got)
	return got, want
}

// allAt is the time the last of want was reached, NaN unless all were.
func allAt(got []float64, want int) float64 {
	if want == 0 || len(got) < want {
		return math.NaN()
	}
	return got[len(got)-1]
}

// median is got's middle value, NaN if empty.
func median(got []float64) float64 {
	if len(got) == 0 {
		return math.NaN()
	}
	return got[len(got)/2]
}

func clusterKey(cluster string, _ int) string { return cluster }

// mhcRows computes the table's figures of every run.
func mhcRows(results []mhcResult) []mhcRow {
	rows := []mhcRow{
		{name: "every healthy cluster's Machines checked (HealthCheckSucceeded=True), s", format: "%.1f"},
		{name: "median healthy Machine checked, s", format: "%.1f"},
		{name: "every healthy cluster's MHC currentHealthy = expectedMachines, s", format: "%.1f"},
		{name: "flapping clusters' Machines checked in the run", format: "%.0f", higherBetter: true},
		{name: "dead clusters' Machines checked (must be 0)", format: "%.0f", info: true},
		{name: "reconcile errors logged (MachineHealthCheck)", format: "%.0f"},
		{name: "… of them ErrClusterNotConnected", format: "%.0f"},
		{name: "… of them on dead clusters", format: "%.0f", info: true},
		{name: "… of them on flapping clusters", format: "%.0f", info: true},
		{name: "… of them on healthy clusters", format: "%.0f"},
		{name: "reconciles that returned success", format: "%.0f", info: true},
		{name: "reconciles that returned requeue-after (deferred by the rate limit, or a next check due)", format: "%.0f", info: true},
		{name: "errors logged by other controllers (ClusterCache)", format: "%.0f"},
		{name: "dials to dead clusters", format: "%.0f"},
		{name: "dials to flapping clusters", format: "%.0f"},
		{name: "dials to healthy clusters", format: "%.0f", info: true},
		{name: "RSS at the end, MiB", format: "%.0f"},
		{name: "goroutines at the end", format: "%.0f"},
	}
	for _, r := range results {
		m := r.Machines
		healthy, want := roleTimes(r, "healthy", m, r.Checked, fleet.MachineName)
		mhcs, wantMHC := roleTimes(r, "healthy", 1, r.Healthy, clusterKey)
		flapping, _ := roleTimes(r, "flapping", m, r.Checked, fleet.MachineName)
		dead, _ := roleTimes(r, "dead", m, r.Checked, fleet.MachineName)
		f := r.Figures
		vals := []float64{allAt(healthy, want), median(healthy), allAt(mhcs, wantMHC), float64(len(flapping)), float64(len(dead)),
			float64(f.ReconcileErrors), float64(f.ErrorKinds["ErrClusterNotConnected"]),
			float64(errorsOn(r, "dead")), float64(errorsOn(r, "flapping")), float64(errorsOn(r, "healthy")),
			float64(f.Reconciles["success"]), float64(f.Reconciles["requeue_after"]), float64(sumValues(f.OtherErrors)),
			float64(r.Dials["dead"]), float64(r.Dials["flapping"]), float64(r.Dials["healthy"]),
			float64(f.RSSBytes) / (1 << 20), float64(f.Goroutines)}
		for i := range rows {
			rows[i].values = append(rows[i].values, vals[i])
		}
	}
	return rows
}

// errorsOn sums the reconcile errors of the MachineHealthChecks
// ("<cluster>-<run>") of the clusters with role.
func errorsOn(r mhcResult, role string) int {
	n := 0
	for name, errs := range r.Figures.ErrorsByMHC {
		if cluster, _, _ := strings.Cut(name, "-"); r.Roles[cluster] == role {
			n += errs
		}
	}
	return n
}

func sumValues(m map[string]int) int {
	n := 0
	for _, v := range m {
		n += v
	}
	return n
}

// cell formats one value.
func (row mhcRow) cell(i int) string {
	if math.IsNaN(row.values[i]) {
		return "not all"
	}
	return fmt.Sprintf(row.format, row.values[i])
}

// notAhead names the rows where run b (the adapter) is not better than run
// a (stock): equal or worse. Informational rows are left out.
func notAhead(rows []mhcRow, a, b int) []string {
	var out []string
	for _, row := range rows {
		if row.info {
			continue
		}
		x, y := row.values[a], row.values[b]
		switch {
		case math.IsNaN(y) && math.IsNaN(x):
			out = append(out, fmt.Sprintf("%s: neither reached", row.name))
		case math.IsNaN(y):
			out = append(out, fmt.Sprintf("%s: %s vs %s", row.name, row.cell(b), row.cell(a)))
		case math.IsNaN(x):
		case y == x || (y > x) != row.higherBetter:
			out = append(out, fmt.Sprintf("%s: %s vs %s", row.name, row.cell(b), row.cell(a)))
		}
	}
	return out
}

// writeMHC prints the -mhc run: the setup, the table (one column per run),
// the error kinds, and where the adapter is not ahead of stock (on the
// mean of each cache's runs).
func writeMHC(w io.Writer, rep mhcReport) error {
	var b strings.Builder
	fmt.Fprintf(&b, "Cluster API v1.14.2 MachineHealthCheck reconciler (bench/peers/capi) on one fleet: %d Clusters (%d workload apiservers) × %d Machines/Nodes, %.0f %% dead, %.0f %% flapping every %s; %s per run; %s, %s; %.0f s wall\n\n",
		rep.Clusters, rep.APIServers, machinesPer(rep), rep.Dead*100, rep.Flapping*100, rep.Period, rep.Duration, rep.Date, rep.Machine, rep.Wall)
	if rep.Gates != "" {
		fmt.Fprintf(&b, "Feature gates: %s.\n\n", rep.Gates)
	}
	rows := mhcRows(rep.Results)
	b.WriteString("| figure |")
	for i := range rep.Results {
		fmt.Fprintf(&b, " %s |", runLabel(rep.Results, i))
	}
	b.WriteString("\n|---|" + strings.Repeat("---|", len(rep.Results)) + "\n")
	for _, row := range rows {
		fmt.Fprintf(&b, "| %s |", row.name)
		for i := range rep.Results {
			fmt.Fprintf(&b, " %s |", row.cell(i))
		}
		b.WriteString("\n")
	}
	for i, r := range rep.Results {
		fmt.Fprintf(&b, "\nReconcile errors logged on the %s, by kind:\n\n", runLabel(rep.Results, i))
		if len(r.Figures.ErrorKinds) == 0 {
			b.WriteString("- none\n")
		}
		for _, k := range slices.Sorted(maps.Keys(r.Figures.ErrorKinds)) {
			fmt.Fprintf(&b, "- %d × `%s`\n", r.Figures.ErrorKinds[k], k)
		}
		for _, k := range slices.Sorted(maps.Keys(r.Figures.OtherErrors)) {
			fmt.Fprintf(&b, "- controller %q: %d errors\n", k, r.Figures.OtherErrors[k])
		}
	}
	if means := meanByCache(rows, rep.Results, "stock", "adapter"); means != nil {
		b.WriteString("\nWhere the adapter is not ahead of stock (adapter vs stock, mean of each one's runs):\n\n")
		for _, line := range notAhead(means, 0, 1) {
			fmt.Fprintf(&b, "- %s\n", line)
		}
	}
	_, err := io.WriteString(w, b.String())
	return err
}

func machinesPer(rep mhcReport) int {
	if len(rep.Results) == 0 {
		return 0
	}
	return rep.Results[0].Machines
}

// runLabel names run i's column: its cache, numbered if it ran more than
// once.
func runLabel(results []mhcResult, i int) string {
	label := results[i].Cache + " ClusterCache"
	n, k := 0, 0
	for j, r := range results {
		if r.Cache == results[i].Cache {
			n++
			if j <= i {
				k++
			}
		}
	}
	if n > 1 {
		label += fmt.Sprintf(" #%d", k)
	}
	return label
}

// meanByCache returns rows with one value per cache of caches: the mean
// of that cache's runs (NaN if one of them is); nil unless every cache
// ran.
func meanByCache(rows []mhcRow, results []mhcResult, caches ...string) []mhcRow {
	out := make([]mhcRow, len(rows))
	for i, row := range rows {
		out[i] = row
		out[i].values = nil
		for _, c := range caches {
			sum, n := 0.0, 0
			for j, r := range results {
				if r.Cache == c {
					sum += row.values[j]
					n++
				}
			}
			if n == 0 {
				return nil
			}
			out[i].values = append(out[i].values, sum/float64(n))
		}
	}
	return out
}
