package chaos

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/clusterpool/clusterpool/bench/peers/protocol"
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
	Crossed []protocol.Crossing `json:"crossed"`
	// Hung: calls through the ClusterCache or its clients that outlived
	// their timeout (+5 s); Panics: reconcile panics; Crashes: manager
	// processes that exited by themselves.
	Hung    []protocol.HungCall `json:"hung"`
	Panics  int                 `json:"panics"`
	Crashes []string            `json:"crashes"`
	// CutOff: throttled and 20 %-error clusters cut off while their fault
	// was on, past issue 43's bar (grayStats.CutOff).
	CutOff []string `json:"cut_off"`
	// Restore: what failed bringing the fleet back to its first shape.
	Restore string `json:"restore,omitempty"`
}

// setChecks adds what the peer reported.
func (v *chaosVerdicts) setChecks(crossed []protocol.Crossing, hung []protocol.HungCall, panics int, crashes []string) {
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
	for _, c := range v.CutOff {
		out = append(out, "cut off: "+c)
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
var minRecreateGap = func() time.Duration {
	c, _ := classOf(faultRecreate)
	return c.Min
}()

// judge judges side s once the fleet is back to its first shape (since
// restored; restoreErr: what failed bringing it back): its verdicts, and
// its time back per fault class.
func (r *chaosRun) judge(ctx context.Context, s *chaosSide, restored time.Time, restoreErr error) chaosResult {
	res := chaosResult{Cache: s.cache, Title: cacheTitle(s.cache), Bound: boundFor(s.cache), Warmup: s.warmup}
	res.Verdicts = r.judgeEnd(ctx, s, restored)
	if restoreErr != nil {
		res.Verdicts.Restore = restoreErr.Error()
	}
	res.Events = r.sortedEvents()
	points, successes, crossed, hung, panics := s.trace.snapshot()
	res.Points = points
	refs, err := s.plane.checkNodeRefs(ctx)
	if err != nil {
		res.Verdicts.Restore = strings.TrimPrefix(res.Verdicts.Restore+"; "+err.Error(), "; ")
	}
	res.Verdicts.setChecks(append(crossed, refs...), hung, panics, s.peer.crashed())
	secs := map[string][]float64{}
	for c, ts := range successes {
		secs[c] = secondsSince(r.t0, ts)
	}
	samples, interrupted := timeBack(res.Events, secs, r.cf.keysOf)
	res.Samples = samples
	res.Classes, res.PastBound = classTable(samples, interrupted, res.Bound, res.Events)
	res.Gray = grayTable(res.Events, s.trace.cutsSince(r.t0))
	res.Verdicts.CutOff = cutOffOf(res.Gray)
	return res
}

// judgeEnd checks that every live Cluster connects on side s and every
// deleted one is gone within the settle time from restored, and compares
// its manager with its baseline.
func (r *chaosRun) judgeEnd(ctx context.Context, s *chaosSide, restored time.Time) chaosVerdicts {
	v := chaosVerdicts{Baseline: s.base, AllConnectedAfter: -1}
	deadline := restored.Add(r.o.Settle)
	for {
		down, at := s.trace.notConnected(r.cf.live())
		if len(down) == 0 && at.After(restored) {
			v.AllConnectedAfter = at.Sub(restored).Seconds()
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
	v.Lingering = r.waitGone(ctx, s, deadline)
	r.waitBack(ctx, s)
	v.End, v.Leaked = s.endStats(ctx)
	prof, err := s.goroutines(ctx, r.o.PProfDir, "end")
	if err = errors.Join(s.profErr, err); err != nil {
		v.ProfileError = err.Error()
	} else {
		v.Grown = grown(s.baseProf, prof, 5)
	}
	return v
}

// waitBack waits until nothing on side s waits for a reconcile after a
// fault, or until the longest bound has passed since the last fault
// ended: the run does not end before its last samples could come back (a
// sample it cut short would read as "never").
func (r *chaosRun) waitBack(ctx context.Context, s *chaosSide) {
	b := boundFor(s.cache)
	last := 0.0
	for _, e := range r.sortedEvents() {
		last = max(last, e.End)
	}
	deadline := r.t0.Add(time.Duration((last + max(b.Seconds, b.Mgmt)) * float64(time.Second)))
	for len(s.trace.waiting()) > 0 && time.Now().Before(deadline) {
		if !sleepCtx(ctx, time.Second) {
			return
		}
	}
}

// waitGone waits until no deleted Cluster (or incarnation) has a
// connection at side s's proxy, a client in its manager or a metric
// series, or until deadline, and returns what is left.
func (r *chaosRun) waitGone(ctx context.Context, s *chaosSide, deadline time.Time) []string {
	for {
		left := r.lingering(ctx, s)
		if len(left) == 0 || time.Now().After(deadline) || !sleepCtx(ctx, 2*time.Second) {
			return left
		}
	}
}

// lingering lists what deleted Clusters left on side s (asks for a full
// sample and reads a goroutine profile).
func (r *chaosRun) lingering(ctx context.Context, s *chaosSide) []string {
	live := r.cf.live()
	retired := r.cf.retiredOpen(s.plane.index)
	var left []string
	samples, _ := s.fullSamples(ctx, 1)
	prof, perr := s.goroutines(ctx, "", "")
	for name, open := range retired {
		if open > 0 {
			left = append(left, fmt.Sprintf("%s: %d connections open to a deleted incarnation's proxy", name, open))
		}
		isLive := slices.Contains(live, name)
		if l := labelledLeft(name, prof.ByCluster[name], isLive, s.baseProf.mostPerCluster()); perr == nil && l != "" {
			left = append(left, l)
		}
		if isLive {
			continue
		}
		if down, _ := s.trace.notConnected([]string{name}); len(down) == 0 {
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
// least figures are within the tolerance of the side's baseline, and
// returns them with what leaked.
func (s *chaosSide) endStats(ctx context.Context) (procStats, []string) {
	base := s.base
	deadline := time.Now().Add(60 * time.Second)
	var all []protocol.ChaosSample
	for {
		got, err := s.fullSamples(ctx, 1)
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
