package main

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"
)

// chaosVerdicts are a run's verdicts once every fault ended.
type chaosVerdicts struct {
	// AllConnectedAfter: seconds from the end of the last fault (and the
	// deletion of the added Clusters) until every live Cluster was
	// connected; -1 if not within the settle time, Stuck then names those
	// that were not.
	AllConnectedAfter float64  `json:"all_connected_after_s"`
	Stuck             []string `json:"stuck"`
	// Lingering: deleted Clusters (and deleted incarnations) with
	// connections, a client, metric series or goroutines (labelled
	// goroutineLabel) left after the settle time.
	Lingering []string `json:"lingering"`
	// Baseline: before the first fault (median of 3); End: at the end
	// (per figure, the least of the samples taken).
	Baseline procStats `json:"baseline"`
	End      procStats `json:"end"`
	Leaked   []string  `json:"leaked"`
	// Grown: the goroutine stacks that grew most from the baseline's
	// profile to the end's; ProfileError: why there are none.
	Grown        []stackGrowth `json:"grown,omitempty"`
	ProfileError string        `json:"profile_error,omitempty"`
	// Crossed: Nodes read through the wrong cluster's client.
	Crossed []chaosCrossing `json:"crossed"`
	// Hung: calls through the ClusterCache or its clients that outlived
	// their timeout (+5 s); Panics: reconcile panics; Crashes: manager
	// processes that exited by themselves.
	Hung    []chaosHung `json:"hung"`
	Panics  int         `json:"panics"`
	Crashes []string    `json:"crashes"`
	// Restore: what failed bringing the fleet back to its first shape.
	Restore string `json:"restore,omitempty"`
}

// setChecks adds what the peer reported.
func (v *chaosVerdicts) setChecks(crossed []chaosCrossing, hung []chaosHung, panics int, crashes []string) {
	v.Crossed, v.Hung, v.Panics, v.Crashes = crossed, hung, panics, crashes
}

// violations lists what is stuck, leaked, crossed or hung.
func (v chaosVerdicts) violations() []string {
	var out []string
	if len(v.Stuck) > 0 {
		out = append(out, fmt.Sprintf("stuck: %d live Clusters not connected: %v", len(v.Stuck), v.Stuck))
	}
	if len(v.Lingering) > 0 {
		out = append(out, fmt.Sprintf("stuck: deleted Clusters not gone: %v", v.Lingering))
	}
	for _, l := range v.Leaked {
		out = append(out, "leaked: "+l)
	}
	if len(v.Crossed) > 0 {
		out = append(out, fmt.Sprintf("crossed: %d Nodes read through another cluster's client, first %+v", len(v.Crossed), v.Crossed[0]))
	}
	if len(v.Hung) > 0 {
		out = append(out, fmt.Sprintf("hung: %d calls outlived their timeout, first %+v", len(v.Hung), v.Hung[0]))
	}
	if v.Restore != "" {
		out = append(out, "the fleet could not be brought back to its first shape: "+v.Restore)
	}
	if v.Panics > 0 || len(v.Crashes) > 0 {
		out = append(out, fmt.Sprintf("hung: %d panics, crashes %v", v.Panics, v.Crashes))
	}
	return out
}

// minRecreateGap is the shortest wait between a Cluster's deletion and
// its creation again.
var minRecreateGap = chaosClasses[slices.IndexFunc(chaosClasses, func(c chaosClass) bool { return c.Name == faultRecreate })].Min

// judgeEnd brings the fleet back to its first shape, then checks that
// every live Cluster connects and every deleted one is gone within the
// settle time, and compares the process with base.
func (r *chaosRun) judgeEnd(ctx context.Context, base procStats) chaosVerdicts {
	v := chaosVerdicts{Baseline: base, AllConnectedAfter: -1}
	if err := r.cf.restore(ctx, r.o.cfg.Clusters, minRecreateGap); err != nil {
		v.Restore = err.Error()
	}
	end := time.Now()
	deadline := end.Add(r.o.chaos.Settle)
	for {
		down, at := r.trace.notConnected(r.cf.live())
		if len(down) == 0 && at.After(end) {
			v.AllConnectedAfter = at.Sub(end).Seconds()
			break
		}
		if time.Now().After(deadline) || !sleepCtx(ctx, time.Second) {
			v.Stuck = down
			break
		}
	}
	if soon := time.Now().Add(10 * time.Second); soon.After(deadline) {
		deadline = soon
	}
	v.Lingering = r.waitGone(ctx, deadline)
	r.waitBack(ctx)
	v.End, v.Leaked = r.endStats(ctx, base)
	prof, err := r.goroutines(ctx, "end")
	if err = errors.Join(r.profErr, err); err != nil {
		v.ProfileError = err.Error()
	} else {
		v.Grown = grown(r.baseProf, prof, 5)
	}
	return v
}

// waitBack waits until no cluster waits for a reconcile after a fault, or
// until the longest bound has passed since the last fault ended: the run
// does not end before its last samples could come back (a sample it cut
// short would read as "never").
func (r *chaosRun) waitBack(ctx context.Context) {
	b := boundFor(r.cache)
	last := 0.0
	for _, e := range r.sortedEvents() {
		last = max(last, e.End)
	}
	deadline := r.t0.Add(time.Duration((last + max(b.Seconds, b.Mgmt)) * float64(time.Second)))
	for len(r.trace.waiting()) > 0 && time.Now().Before(deadline) {
		if !sleepCtx(ctx, time.Second) {
			return
		}
	}
}

// waitGone waits until no deleted Cluster (or incarnation) has a
// connection at its proxy, a client in the peer or a metric series, or
// until deadline, and returns what is left.
func (r *chaosRun) waitGone(ctx context.Context, deadline time.Time) []string {
	for {
		left := r.lingering(ctx)
		if len(left) == 0 || time.Now().After(deadline) || !sleepCtx(ctx, 2*time.Second) {
			return left
		}
	}
}

// lingering lists what deleted Clusters left (asks for a full sample and
// reads a goroutine profile).
func (r *chaosRun) lingering(ctx context.Context) []string {
	live := r.cf.live()
	r.cf.mu.Lock()
	retired := map[string]int{}
	for name, ps := range r.cf.retired {
		for _, p := range ps {
			retired[name] += p.Open()
		}
	}
	r.cf.mu.Unlock()
	var left []string
	samples, _ := r.fullSamples(ctx, 1)
	prof, perr := r.goroutines(ctx, "")
	for name, open := range retired {
		if open > 0 {
			left = append(left, fmt.Sprintf("%s: %d connections open to a deleted incarnation's proxy", name, open))
		}
		isLive := slices.Contains(live, name)
		if l := labelledLeft(name, prof.ByCluster[name], isLive, r.baseProf.mostPerCluster()); perr == nil && l != "" {
			left = append(left, l)
		}
		if isLive {
			continue
		}
		if down, _ := r.trace.notConnected([]string{name}); len(down) == 0 {
			left = append(left, name+": still connected")
		}
		if len(samples) > 0 && samples[len(samples)-1].Series[name] > 0 {
			left = append(left, fmt.Sprintf("%s: %d metric series", name, samples[len(samples)-1].Series[name]))
		}
	}
	slices.Sort(left)
	return left
}

// labelledLeft says what goroutines labelled with Cluster name (n) a
// deleted incarnation of it left, if any: every one if no Cluster of that
// name lives; for a live one (whose own goroutines stay), twice the most
// of one Cluster at the baseline (baseMost, at least 1) or more.
func labelledLeft(name string, n int, live bool, baseMost int) string {
	switch {
	case !live && n > 0:
		return fmt.Sprintf("%s: %d goroutines labelled with it", name, n)
	case live && n >= 2*max(baseMost, 1):
		return fmt.Sprintf("%s: %d goroutines labelled with it, at least twice the most of one Cluster at the baseline (%d): an earlier incarnation's", name, n, baseMost)
	}
	return ""
}

// endStats takes full samples, 3 s apart, for up to 60 s, until their
// least figures are within the tolerance of base, and returns them with
// what leaked.
func (r *chaosRun) endStats(ctx context.Context, base procStats) (procStats, []string) {
	deadline := time.Now().Add(60 * time.Second)
	var all []chaosSample
	for {
		got, err := r.fullSamples(ctx, 1)
		if err != nil {
			return minStats(all), []string{err.Error()}
		}
		all = append(all, got...)
		end := minStats(all)
		leaked := leaks(base, end)
		if (len(leaked) == 0 && len(all) >= 3) || time.Now().After(deadline) || !sleepCtx(ctx, time.Second) {
			return end, leaked
		}
	}
}
