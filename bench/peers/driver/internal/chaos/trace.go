package chaos

import (
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/clusterpool/clusterpool/bench/peers/protocol"
)

// tracePoint is one sample in the plot: seconds since the fault window
// opened (negative before), clusters connected and live.
type tracePoint struct {
	T         float64 `json:"t"`
	Connected int     `json:"connected"`
	Live      int     `json:"live"`
}

// chaosTrace collects the peer's samples: who is connected, each
// cluster's successful reconciles, crossings, hung calls, panics, full
// samples; and the clusters waiting for a reconcile after a fault
// (pending; the driver pokes their MachineHealthChecks); and when each
// cluster was cut off (cuts: a sample that no longer showed it connected
// after one that did; a cut shorter than the sample period can go
// unseen).
type chaosTrace struct {
	mu        sync.Mutex
	t0        time.Time
	points    []tracePoint
	connected map[string]bool
	last      time.Time // the last sample's time
	successes map[string][]time.Time
	cuts      map[string][]time.Time
	crossed   []protocol.Crossing
	hung      []protocol.HungCall
	panics    map[int]int // by process: its last count
	pending   map[string]time.Time
	fulls     []protocol.ChaosSample
	pprof     string // where the latest process serves net/http/pprof
	live      func() []string
}

func newChaosTrace(live func() []string) *chaosTrace {
	return &chaosTrace{t0: time.Now(), connected: map[string]bool{}, successes: map[string][]time.Time{},
		cuts: map[string][]time.Time{}, panics: map[int]int{}, pending: map[string]time.Time{}, live: live}
}

// collect reads samples until in closes.
func (tr *chaosTrace) collect(in <-chan procSample) {
	for s := range in {
		tr.add(s)
	}
}

// add takes one sample in.
func (tr *chaosTrace) add(s procSample) {
	live := tr.live()
	tr.mu.Lock()
	defer tr.mu.Unlock()
	at := time.UnixMilli(s.UnixMs)
	tr.last = at
	was := tr.connected
	tr.connected = map[string]bool{}
	for _, c := range s.Connected {
		tr.connected[c] = true
	}
	for c := range was {
		if !tr.connected[c] {
			tr.cuts[c] = append(tr.cuts[c], at)
		}
	}
	n := 0
	for _, c := range live {
		if tr.connected[c] {
			n++
		}
	}
	tr.points = append(tr.points, tracePoint{T: at.Sub(tr.t0).Seconds(), Connected: n, Live: len(live)})
	for mhc, ms := range s.Reconciled {
		c := strings.TrimSuffix(mhc, chaosMHCSuffix)
		t := time.UnixMilli(ms)
		tr.successes[c] = append(tr.successes[c], t)
		if since, ok := tr.pending[c]; ok && !t.Before(since) {
			delete(tr.pending, c)
		}
	}
	tr.crossed = append(tr.crossed, s.Crossed...)
	tr.hung = append(tr.hung, s.Hung...)
	tr.panics[s.Proc] = s.Panics
	if s.Full {
		tr.fulls = append(tr.fulls, s.ChaosSample)
	}
	if s.PProf != "" {
		tr.pprof = s.PProf
	}
}

// pprofAddr is where the peer process that sent the latest sample serves
// net/http/pprof.
func (tr *chaosTrace) pprofAddr() string {
	tr.mu.Lock()
	defer tr.mu.Unlock()
	return tr.pprof
}

// setT0 makes t0 the origin of the points (the fault window's opening).
func (tr *chaosTrace) setT0(t0 time.Time) {
	tr.mu.Lock()
	defer tr.mu.Unlock()
	for i := range tr.points {
		tr.points[i].T -= t0.Sub(tr.t0).Seconds()
	}
	tr.t0 = t0
}

// await marks clusters as waiting for a successful reconcile that ends
// at or after since.
func (tr *chaosTrace) await(clusters []string, since time.Time) {
	tr.mu.Lock()
	defer tr.mu.Unlock()
	for _, c := range clusters {
		if old, ok := tr.pending[c]; !ok || old.Before(since) {
			tr.pending[c] = since
		}
	}
}

// waiting returns the clusters waiting for a reconcile, sorted.
func (tr *chaosTrace) waiting() []string {
	tr.mu.Lock()
	defer tr.mu.Unlock()
	out := make([]string, 0, len(tr.pending))
	for c := range tr.pending {
		out = append(out, c)
	}
	slices.Sort(out)
	return out
}

// notConnected returns those of clusters the last sample did not show
// connected, and that sample's time.
func (tr *chaosTrace) notConnected(clusters []string) ([]string, time.Time) {
	tr.mu.Lock()
	defer tr.mu.Unlock()
	var out []string
	for _, c := range clusters {
		if !tr.connected[c] {
			out = append(out, c)
		}
	}
	return out, tr.last
}

// fullsSince returns the full samples taken at or after t.
func (tr *chaosTrace) fullsSince(t time.Time) []protocol.ChaosSample {
	tr.mu.Lock()
	defer tr.mu.Unlock()
	var out []protocol.ChaosSample
	for _, s := range tr.fulls {
		if !time.UnixMilli(s.UnixMs).Before(t) {
			out = append(out, s)
		}
	}
	return out
}

// snapshot returns copies of what the judge reads.
func (tr *chaosTrace) snapshot() (points []tracePoint, successes map[string][]time.Time, crossed []protocol.Crossing, hung []protocol.HungCall, panics int) {
	tr.mu.Lock()
	defer tr.mu.Unlock()
	successes = map[string][]time.Time{}
	for c, ts := range tr.successes {
		successes[c] = slices.Clone(ts)
	}
	for _, n := range tr.panics {
		panics += n
	}
	return slices.Clone(tr.points), successes, slices.Clone(tr.crossed), slices.Clone(tr.hung), panics
}

// cutsSince returns, per cluster, when it was cut off, in seconds since
// t0, sorted.
func (tr *chaosTrace) cutsSince(t0 time.Time) map[string][]float64 {
	tr.mu.Lock()
	defer tr.mu.Unlock()
	out := map[string][]float64{}
	for c, ts := range tr.cuts {
		out[c] = secondsSince(t0, ts)
	}
	return out
}
