package sim

import (
	"fmt"
	"io"
	"slices"
	"strings"
	"time"
)

// Result is one strategy's figures on one scenario. Times are unscaled
// seconds; -1 means "not reached within the run".
type Result struct {
	Scenario string  `json:"scenario"`
	Strategy string  `json:"strategy"`
	Clusters int     `json:"clusters"`
	Objects  int     `json:"objects_per_cluster"`
	Dead     float64 `json:"dead_fraction"`
	Flap     float64 `json:"flap_fraction"`
	Seconds  float64 `json:"run_seconds"`
	// Down is how long the dead clusters of a recovery scenario were down
	// at least (Scenario.RecoverAt).
	Down float64 `json:"down_s,omitempty"`

	// AllReconciled: until every measured object reconciled successfully once.
	AllReconciled float64 `json:"all_reconciled_s"`
	// Scale is the time scale the run ran at (see Scenario.MinScale).
	Scale float64 `json:"scale"`
	// HealthyPerSec: successful reconciles of healthy clusters' objects per
	// second over the run; SteadyPerSec over its second half.
	HealthyPerSec float64 `json:"healthy_per_s"`
	SteadyPerSec  float64 `json:"steady_healthy_per_s,omitempty"`
	Reconciles    int     `json:"reconciles"`
	MeanMs        float64 `json:"mean_ms"`
	P50Ms         float64 `json:"p50_ms"`
	P99Ms         float64 `json:"p99_ms"`
	// BlockedWorkerSeconds: worker time spent in Get, or hung in calls to an
	// unreachable cluster.
	BlockedWorkerSeconds float64 `json:"blocked_worker_s"`
	// HungWorkerSeconds: the part of BlockedWorkerSeconds spent in requests
	// on an established client that failed or were rejected (hung until a
	// timeout, or canceled when the breaker opened).
	HungWorkerSeconds float64 `json:"hung_worker_s"`
	Requeues          int     `json:"requeues"`
	Errors            int     `json:"errors"`
	Dials             int64   `json:"dials"`
	// DeadDials: the dials of a cluster that was unreachable at the time.
	DeadDials int64 `json:"dead_dials"`
	// DeadDialsPerMin: how often a Dead cluster is dialed while it is down,
	// from its first dial on: its dials per minute, over all Dead clusters
	// (0 without any). DeadDials also counts how soon each was first
	// dialed; this is the rate alone.
	DeadDialsPerMin float64 `json:"dead_dials_per_min,omitempty"`
	// HealthyConnected: until every Healthy cluster had a client (its first
	// successful dial); -1 if one never did.
	HealthyConnected float64 `json:"healthy_connected_s"`
	Probes           int64   `json:"probes"`
	Clients          int     `json:"clients_at_end"`
	// RecoveryMean / RecoveryMax: from a dead cluster's recovery until all
	// its objects reconciled successfully again, mean and max over the
	// recovering clusters.
	RecoveryMean float64 `json:"recovery_mean_s,omitempty"`
	RecoveryMax  float64 `json:"recovery_max_s,omitempty"`
	// BytesPerCluster and Goroutines: heap plus stacks added per cluster,
	// and goroutines added, once every cluster connected (scenario 5).
	BytesPerCluster float64 `json:"bytes_per_cluster,omitempty"`
	Goroutines      int     `json:"goroutines,omitempty"`
}

func (r *run) result(strategy string, elapsed time.Duration, clients int, mem memSample) Result {
	sc := r.sc
	res := Result{Scenario: sc.Name, Strategy: strategy, Clusters: sc.Clusters, Objects: sc.Objects,
		Dead: sc.Dead, Flap: sc.Flap, Seconds: elapsed.Seconds(), Down: sc.RecoverAt.Seconds(), AllReconciled: -1, Scale: r.cfg.Scale,
		Dials: r.w.dials.Load(), Probes: r.w.probes.Load(), Clients: clients}
	for c := range r.w.downDials {
		res.DeadDials += r.w.downDials[c].Load()
	}
	var all []time.Duration
	var healthy, steady int
	for _, st := range r.stats {
		all = append(all, st.durations...)
		healthy += st.healthyOK
		steady += st.steadyOK
		res.BlockedWorkerSeconds += st.blocked.Seconds()
		res.HungWorkerSeconds += st.hung.Seconds()
		res.Requeues += st.requeues
		res.Errors += st.errors
	}
	res.Reconciles = len(all)
	res.HealthyPerSec = float64(healthy) / elapsed.Seconds()
	if sc.Saturate {
		res.SteadyPerSec = float64(steady) / (elapsed - sc.Duration/2).Seconds()
	}
	if len(all) > 0 {
		slices.Sort(all)
		var sum time.Duration
		for _, d := range all {
			sum += d
		}
		res.MeanMs = ms(sum / time.Duration(len(all)))
		res.P50Ms = ms(all[len(all)/2])
		res.P99Ms = ms(all[min(len(all)-1, len(all)*99/100)])
	}
	if r.pending.Load() == 0 {
		var last int64
		for i := range r.firstOK {
			last = max(last, r.firstOK[i].Load())
		}
		res.AllReconciled = time.Duration(last - 1).Seconds()
	}
	res.HealthyConnected, res.DeadDialsPerMin = r.connectFigures(elapsed)
	if sc.RecoverAt > 0 {
		res.RecoveryMean, res.RecoveryMax = r.recovery()
	}
	if sc.Memory {
		res.BytesPerCluster = float64(mem.bytes) / float64(sc.Clusters)
		res.Goroutines = mem.goroutines
	}
	return res
}

// connectFigures returns Result.HealthyConnected and DeadDialsPerMin.
func (r *run) connectFigures(elapsed time.Duration) (healthyConnected, deadPerMin float64) {
	w := r.w
	var last int64
	never := false             // a Healthy cluster never connected
	var exposure time.Duration // Dead clusters' time down since their first dial
	dials := 0
	for c, f := range w.faults {
		switch f {
		case Healthy:
			up := w.firstUp[c].Load()
			never = never || up == 0
			last = max(last, up-1)
		case Dead:
			first := w.firstDial[c].Load()
			if first == 0 {
				continue
			}
			end := elapsed
			if at := w.recoverAt[c]; at > 0 {
				end = min(end, at)
			}
			exposure += max(0, end-time.Duration(first-1))
			dials += int(w.downDials[c].Load())
		}
	}
	if exposure > 0 {
		deadPerMin = float64(dials) / exposure.Minutes()
	}
	if never {
		return -1, deadPerMin
	}
	return time.Duration(last).Seconds(), deadPerMin
}

// recovery returns the mean and the maximum over recovering clusters of the
// time from a cluster's recovery until every object of it reconciled
// successfully; -1 if some object never did.
func (r *run) recovery() (mean, worst float64) {
	var sum float64
	n := 0
	for c, f := range r.w.faults {
		if f != Dead {
			continue
		}
		var latest int64
		for j := range r.sc.Objects {
			v := r.firstOK[c*r.sc.Objects+j].Load()
			if v == 0 {
				return -1, -1
			}
			latest = max(latest, v-1)
		}
		d := (time.Duration(latest) - r.w.RecoveredAt(c)).Seconds()
		sum += d
		worst = max(worst, d)
		n++
	}
	if n == 0 {
		return 0, 0
	}
	return sum / float64(n), worst
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

// WriteTable prints results as one markdown table.
func WriteTable(w io.Writer, results []Result) error {
	cols := []string{"scenario", "strategy", "clusters", "dead", "all reconciled", "healthy/s",
		"steady/s", "mean ms", "p50 ms", "p99 ms", "blocked worker-s", "hung worker-s", "requeues", "errors",
		"dials", "dead dials", "dead dials/min", "healthy connected", "recovery mean/max s", "bytes/cluster", "goroutines"}
	var b strings.Builder
	b.WriteString("| " + strings.Join(cols, " | ") + " |\n|")
	for range cols {
		b.WriteString("---|")
	}
	b.WriteString("\n")
	for _, r := range results {
		row := []string{r.Scenario, r.Strategy, fmt.Sprint(r.Clusters), pct(r.Dead + r.Flap),
			secs(r.AllReconciled, r.Seconds), fmt.Sprintf("%.1f", r.HealthyPerSec), optional(r.SteadyPerSec, "%.1f"),
			fmt.Sprintf("%.0f", r.MeanMs), fmt.Sprintf("%.0f", r.P50Ms), fmt.Sprintf("%.0f", r.P99Ms),
			fmt.Sprintf("%.0f", r.BlockedWorkerSeconds), fmt.Sprintf("%.0f", r.HungWorkerSeconds), fmt.Sprint(r.Requeues), fmt.Sprint(r.Errors),
			fmt.Sprint(r.Dials), fmt.Sprint(r.DeadDials), optional(r.DeadDialsPerMin, "%.2f"), secs(r.HealthyConnected, r.Seconds), recov(r), optional(r.BytesPerCluster, "%.0f"), optInt(r.Goroutines, r.BytesPerCluster != 0)}
		b.WriteString("| " + strings.Join(row, " | ") + " |\n")
	}
	_, err := io.WriteString(w, b.String())
	return err
}

func pct(f float64) string { return fmt.Sprintf("%.0f%%", f*100) }

func secs(v, run float64) string {
	if v < 0 {
		return fmt.Sprintf("> %.0f s", run)
	}
	return fmt.Sprintf("%.1f s", v)
}

func optional(v float64, format string) string {
	if v == 0 {
		return ""
	}
	return fmt.Sprintf(format, v)
}

func optInt(v int, show bool) string {
	if !show {
		return ""
	}
	return fmt.Sprint(v)
}

func recov(r Result) string {
	if r.RecoveryMean == 0 && r.RecoveryMax == 0 {
		return ""
	}
	if r.RecoveryMean < 0 {
		return "never"
	}
	return fmt.Sprintf("%.1f / %.1f", r.RecoveryMean, r.RecoveryMax)
}
