package mhc

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

// Row is one figure of the -mhc table, one value per run; lower is
// better unless HigherBetter, and neither if Info. A NaN value is "not
// reached".
type Row struct {
	Name         string
	Values       []float64
	Format       string // fmt verb for a value
	HigherBetter bool
	Info         bool
}

// roleTimes returns the times of the keys of the clusters with role, the
// count expected (per cluster `per`) and how many were reached.
func roleTimes(r Result, role string, per int, times map[string]float64, key func(cluster string, j int) string) (got []float64, want int) {
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

// Median is got's middle value, NaN if empty.
func Median(got []float64) float64 {
	if len(got) == 0 {
		return math.NaN()
	}
	return got[len(got)/2]
}

func clusterKey(cluster string, _ int) string { return cluster }

// Rows computes the table's figures of every run.
func Rows(results []Result) []Row {
	rows := []Row{
		{Name: "every healthy cluster's Machines checked (HealthCheckSucceeded=True), s", Format: "%.1f"},
		{Name: "median healthy Machine checked, s", Format: "%.1f"},
		{Name: "every healthy cluster's MHC currentHealthy = expectedMachines, s", Format: "%.1f"},
		{Name: "flapping clusters' Machines checked in the run", Format: "%.0f", HigherBetter: true},
		{Name: "dead clusters' Machines checked (must be 0)", Format: "%.0f", Info: true},
		{Name: "reconcile errors logged (MachineHealthCheck)", Format: "%.0f"},
		{Name: "… of them ErrClusterNotConnected", Format: "%.0f"},
		{Name: "… of them on dead clusters", Format: "%.0f", Info: true},
		{Name: "… of them on flapping clusters", Format: "%.0f", Info: true},
		{Name: "… of them on healthy clusters", Format: "%.0f"},
		{Name: "reconciles that returned success", Format: "%.0f", Info: true},
		{Name: "reconciles that returned requeue-after (deferred by the rate limit, or a next check due)", Format: "%.0f", Info: true},
		{Name: "errors logged by other controllers (ClusterCache)", Format: "%.0f"},
		{Name: "dials to dead clusters", Format: "%.0f"},
		{Name: "dials to flapping clusters", Format: "%.0f"},
		{Name: "dials to healthy clusters", Format: "%.0f", Info: true},
		{Name: "RSS at the end, MiB", Format: "%.0f"},
		{Name: "goroutines at the end", Format: "%.0f"},
	}
	for _, r := range results {
		m := r.Machines
		healthy, want := roleTimes(r, "healthy", m, r.Checked, fleet.MachineName)
		mhcs, wantMHC := roleTimes(r, "healthy", 1, r.Healthy, clusterKey)
		flapping, _ := roleTimes(r, "flapping", m, r.Checked, fleet.MachineName)
		dead, _ := roleTimes(r, "dead", m, r.Checked, fleet.MachineName)
		f := r.Figures
		vals := []float64{allAt(healthy, want), Median(healthy), allAt(mhcs, wantMHC), float64(len(flapping)), float64(len(dead)),
			float64(f.ReconcileErrors), float64(f.ErrorKinds["ErrClusterNotConnected"]),
			float64(errorsOn(r, "dead")), float64(errorsOn(r, "flapping")), float64(errorsOn(r, "healthy")),
			float64(f.Reconciles["success"]), float64(f.Reconciles["requeue_after"]), float64(sumValues(f.OtherErrors)),
			float64(r.Dials["dead"]), float64(r.Dials["flapping"]), float64(r.Dials["healthy"]),
			float64(f.RSSBytes) / (1 << 20), float64(f.Goroutines)}
		for i := range rows {
			rows[i].Values = append(rows[i].Values, vals[i])
		}
	}
	return rows
}

// errorsOn sums the reconcile errors of the MachineHealthChecks
// ("<cluster>-<run>") of the clusters with role.
func errorsOn(r Result, role string) int {
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
func (row Row) cell(i int) string {
	if math.IsNaN(row.Values[i]) {
		return "not all"
	}
	return fmt.Sprintf(row.Format, row.Values[i])
}

// notAhead names the rows where run b (the adapter) is not better than run
// a (stock): equal or worse. Informational rows are left out.
func notAhead(rows []Row, a, b int) []string {
	var out []string
	for _, row := range rows {
		if row.Info {
			continue
		}
		x, y := row.Values[a], row.Values[b]
		switch {
		case math.IsNaN(y) && math.IsNaN(x):
			out = append(out, fmt.Sprintf("%s: neither reached", row.Name))
		case math.IsNaN(y):
			out = append(out, fmt.Sprintf("%s: %s vs %s", row.Name, row.cell(b), row.cell(a)))
		case math.IsNaN(x):
		case y == x || (y > x) != row.HigherBetter:
			out = append(out, fmt.Sprintf("%s: %s vs %s", row.Name, row.cell(b), row.cell(a)))
		}
	}
	return out
}

// writeMHC prints the -mhc run: the setup, the table (one column per run),
// the error kinds, and where the adapter is not ahead of stock (on the
// mean of each cache's runs).
func writeMHC(w io.Writer, rep Report) error {
	var b strings.Builder
	fmt.Fprintf(&b, "Cluster API v1.14.2 MachineHealthCheck reconciler (bench/peers/capi) on one fleet: %d Clusters (%d workload apiservers) × %d Machines/Nodes, %.0f %% dead, %.0f %% flapping every %s; %s per run; %s, %s; %.0f s wall\n\n",
		rep.Clusters, rep.APIServers, MachinesPer(rep), rep.Dead*100, rep.Flapping*100, rep.Period, rep.Duration, rep.Date, rep.Machine, rep.Wall)
	if rep.Gates != "" {
		fmt.Fprintf(&b, "Feature gates: %s.\n\n", rep.Gates)
	}
	rows := Rows(rep.Results)
	b.WriteString("| figure |")
	for i := range rep.Results {
		fmt.Fprintf(&b, " %s |", runLabel(rep.Results, i))
	}
	b.WriteString("\n|---|" + strings.Repeat("---|", len(rep.Results)) + "\n")
	for _, row := range rows {
		fmt.Fprintf(&b, "| %s |", row.Name)
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
	if means := MeanByCache(rows, rep.Results, "stock", "adapter"); means != nil {
		b.WriteString("\nWhere the adapter is not ahead of stock (adapter vs stock, mean of each one's runs):\n\n")
		for _, line := range notAhead(means, 0, 1) {
			fmt.Fprintf(&b, "- %s\n", line)
		}
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// MachinesPer is the Machines per Cluster of rep's runs (0 without a run).
func MachinesPer(rep Report) int {
	if len(rep.Results) == 0 {
		return 0
	}
	return rep.Results[0].Machines
}

// runLabel names run i's column: its cache, numbered if it ran more than
// once.
func runLabel(results []Result, i int) string {
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

// MeanByCache returns rows with one value per cache of caches: the mean
// of that cache's runs (NaN if one of them is); nil unless every cache
// ran.
func MeanByCache(rows []Row, results []Result, caches ...string) []Row {
	out := make([]Row, len(rows))
	for i, row := range rows {
		out[i] = row
		out[i].Values = nil
		for _, c := range caches {
			sum, n := 0.0, 0
			for j, r := range results {
				if r.Cache == c {
					sum += row.Values[j]
					n++
				}
			}
			if n == 0 {
				return nil
			}
			out[i].Values = append(out[i].Values, sum/float64(n))
		}
	}
	return out
}
