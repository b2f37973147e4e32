package chaos

import (
	"fmt"
	"math"
	"slices"
	"sort"
	"time"

	"github.com/clusterpool/clusterpool/bench/peers/protocol"
)

// faultEvent is a fault as one run applied it: when (seconds since the
// fault window opened), on which Clusters (those it could affect when it
// began), and what failed.
type faultEvent struct {
	fault
	Start    float64  `json:"start_s"`
	End      float64  `json:"end_s"`
	Clusters []string `json:"clusters"`
	Err      string   `json:"error,omitempty"`
}

// backSample is one cluster's time back after one fault: from Free, when
// no fault held it any more (the fault's end, or the end of faults
// overlapping it there), to Back, when its MachineHealthCheck and each of
// its Machines had all reconciled successfully since (-1: not before the
// run ended).
type backSample struct {
	Fault   int     `json:"fault"`
	Class   string  `json:"class"`
	Cluster string  `json:"cluster"`
	Free    float64 `json:"free_s"`
	Back    float64 `json:"back_s"`
	// FreedBy is the class of the fault whose end freed the cluster (its
	// own, or an overlapping one's): it picks the bound (chaosBound.For).
	FreedBy string `json:"freed_by"`
}

// Seconds is Back - Free, or +Inf if it never came back.
func (b backSample) Seconds() float64 {
	if b.Back < 0 {
		return math.Inf(1)
	}
	return b.Back - b.Free
}

// timeBack computes every (fault, cluster) time back of a run.
// successes are the successful reconciles (seconds, sorted) by what they
// reconciled; keysOf names those a cluster waits for (its
// MachineHealthCheck's and its Machines'). A sample that another fault on
// the same cluster interrupts (it starts after Free, before the cluster is
// back) is not a sample: interrupted counts them per class.
func timeBack(events []faultEvent, successes map[string][]float64, keysOf func(cluster string) []string) (out []backSample, interrupted map[string]int) {
	interrupted = map[string]int{}
	on := map[string][]faultEvent{}
	for _, e := range events {
		for _, c := range e.Clusters {
			on[c] = append(on[c], e)
		}
	}
	for _, e := range events {
		for _, c := range e.Clusters {
			free := freeAt(on[c], e.End)
			back := backAt(successes, keysOf(c), free)
			until := back
			if back < 0 {
				until = math.Inf(1)
			}
			if slices.ContainsFunc(on[c], func(o faultEvent) bool { return o.Start > free && o.Start < until }) {
				interrupted[e.Class]++
				continue
			}
			out = append(out, backSample{Fault: e.ID, Class: e.Class, Cluster: c, Free: free, Back: back, FreedBy: endingAt(on[c], free, e.Class)})
		}
	}
	return out, interrupted
}

// freeAt is the first time at or after t that none of events holds the
// cluster (an event holds it from its start until its end).
func freeAt(events []faultEvent, t float64) float64 {
	for changed := true; changed; {
		changed = false
		for _, o := range events {
			if o.Start <= t && o.End > t {
				t, changed = o.End, true
			}
		}
	}
	return t
}

// endingAt is the class of the first of events that ends at t, or class
// if none does.
func endingAt(events []faultEvent, t float64, class string) string {
	if i := slices.IndexFunc(events, func(o faultEvent) bool { return o.End == t }); i >= 0 {
		return events[i].Class
	}
	return class
}

// backAt is the first time at or after free by which every one of keys
// has a success at or after free, or -1.
func backAt(successes map[string][]float64, keys []string, free float64) float64 {
	back := free
	for _, k := range keys {
		t := firstAtOrAfter(successes[k], free)
		if t < 0 {
			return -1
		}
		back = max(back, t)
	}
	return back
}

// firstAtOrAfter is the first of sorted ts at or after t, or -1.
func firstAtOrAfter(ts []float64, t float64) float64 {
	i := sort.SearchFloat64s(ts, t)
	if i == len(ts) {
		return -1
	}
	return ts[i]
}

// classStats are one fault class's times back in one run.
type classStats struct {
	Class       string  `json:"class"`
	Samples     int     `json:"samples"`
	Interrupted int     `json:"interrupted"`
	P50         float64 `json:"p50_s"`
	P99         float64 `json:"p99_s"`
	Max         float64 `json:"max_s"` // +Inf is written as -1
	Never       int     `json:"never"`
	PastBound   int     `json:"past_bound"`
}

// pastBound is a cluster back later than the bound (or never), with
// every fault it had.
type pastBound struct {
	backSample
	Seconds float64      `json:"seconds"` // -1: never
	History []faultEvent `json:"history"`
}

// classTable summarizes samples per class (in the registry's order)
// against bound (each sample's, by the fault that freed it), and lists
// the samples past it with their clusters' fault histories.
func classTable(samples []backSample, interrupted map[string]int, bound chaosBound, events []faultEvent) ([]classStats, []pastBound) {
	by := map[string][]float64{}
	pastBy := map[string]int{}
	var past []pastBound
	for _, s := range samples {
		d := s.Seconds()
		by[s.Class] = append(by[s.Class], d)
		if d > bound.For(s.FreedBy) {
			pastBy[s.Class]++
			past = append(past, pastBound{backSample: s, Seconds: finite(d), History: history(events, s.Cluster)})
		}
	}
	var out []classStats
	for _, class := range classOrder() {
		ds := by[class]
		if len(ds) == 0 && interrupted[class] == 0 {
			continue
		}
		slices.Sort(ds)
		st := classStats{Class: class, Samples: len(ds), Interrupted: interrupted[class]}
		if len(ds) > 0 {
			st.P50, st.P99, st.Max = finite(rank(ds, 0.50)), finite(rank(ds, 0.99)), finite(ds[len(ds)-1])
		}
		for _, d := range ds {
			if math.IsInf(d, 1) {
				st.Never++
			}
		}
		st.PastBound = pastBy[class]
		out = append(out, st)
	}
	return out, past
}

// rank is the nearest-rank q-quantile of sorted ds.
func rank(ds []float64, q float64) float64 {
	i := int(math.Ceil(q*float64(len(ds)))) - 1
	return ds[min(max(i, 0), len(ds)-1)]
}

// finite maps +Inf (never back) to -1 for JSON.
func finite(d float64) float64 {
	if math.IsInf(d, 0) {
		return -1
	}
	return d
}

// history is every event that held cluster.
func history(events []faultEvent, cluster string) []faultEvent {
	var out []faultEvent
	for _, e := range events {
		if slices.Contains(e.Clusters, cluster) {
			h := e
			h.Clusters = nil
			out = append(out, h)
		}
	}
	return out
}

// leakTolerance is how much the end may exceed the baseline.
const leakTolerance = 0.10

// procStats are the process figures the leak verdict compares.
type procStats struct {
	Goroutines int    `json:"goroutines"`
	FDs        int    `json:"fds"`
	TCP        int    `json:"tcp"`
	HeapBytes  uint64 `json:"heap_bytes"`
}

func statsOf(s protocol.ChaosSample) procStats {
	return procStats{Goroutines: s.Goroutines, FDs: s.FDs, TCP: s.TCP, HeapBytes: s.HeapBytes}
}

// medianStats is the per-figure median of samples (the baseline).
func medianStats(samples []protocol.ChaosSample) procStats {
	pick := func(f func(protocol.ChaosSample) float64) float64 {
		var v []float64
		for _, s := range samples {
			v = append(v, f(s))
		}
		slices.Sort(v)
		if len(v) == 0 {
			return 0
		}
		return v[len(v)/2]
	}
	return procStats{
		Goroutines: int(pick(func(s protocol.ChaosSample) float64 { return float64(s.Goroutines) })),
		FDs:        int(pick(func(s protocol.ChaosSample) float64 { return float64(s.FDs) })),
		TCP:        int(pick(func(s protocol.ChaosSample) float64 { return float64(s.TCP) })),
		HeapBytes:  uint64(pick(func(s protocol.ChaosSample) float64 { return float64(s.HeapBytes) })),
	}
}

// minStats is the per-figure minimum of samples (the end: a leak keeps
// every sample up).
func minStats(samples []protocol.ChaosSample) procStats {
	var m procStats
	for i, s := range samples {
		if i == 0 {
			m = statsOf(s)
			continue
		}
		m = procStats{Goroutines: min(m.Goroutines, s.Goroutines), FDs: min(m.FDs, s.FDs), TCP: min(m.TCP, s.TCP), HeapBytes: min(m.HeapBytes, s.HeapBytes)}
	}
	return m
}

// leaks lists the figures of end above (1 + leakTolerance) × base.
func leaks(base, end procStats) []string {
	var out []string
	check := func(name string, b, e float64) {
		if e > (1+leakTolerance)*b {
			out = append(out, fmt.Sprintf("%s %.0f > %.0f (baseline %.0f + %.0f %%)", name, e, (1+leakTolerance)*b, b, leakTolerance*100))
		}
	}
	check("goroutines", float64(base.Goroutines), float64(end.Goroutines))
	check("fds", float64(base.FDs), float64(end.FDs))
	check("tcp", float64(base.TCP), float64(end.TCP))
	check("heap bytes", float64(base.HeapBytes), float64(end.HeapBytes))
	return out
}

// secondsSince converts times to seconds since t0, sorted.
func secondsSince(t0 time.Time, ts []time.Time) []float64 {
	out := make([]float64, 0, len(ts))
	for _, t := range ts {
		out = append(out, t.Sub(t0).Seconds())
	}
	slices.Sort(out)
	return out
}
