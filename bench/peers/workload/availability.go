package workload

import (
	"context"
	"maps"
	"slices"
	"strings"
	"sync"
	"time"

	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/clusterpool/clusterpool/bench/peers/protocol"
)

// Availability is what a run with -sample-connected records besides its
// figures (bench/peers/protocol).
type Availability = protocol.Availability

// sampler asks Strategy.Connected about every cluster of a plan every
// period and records the answers and the unsuccessful reconciles as an
// Availability.
type sampler struct {
	connected func(ctx context.Context, cluster client.ObjectKey) bool
	open      func(cluster client.ObjectKey) bool // nil: no breaker
	keys      []client.ObjectKey
	period    time.Duration
	cancel    context.CancelFunc
	done      chan struct{}
	sampled   chan struct{} // closed once every cluster was asked once

	mu       sync.Mutex
	a        Availability
	downFrom map[string]int64 // open not-connected intervals
	openFrom map[string]int64 // open breaker-open intervals
}

// startSampler starts sampling if the plan asks for it (SampleConnected)
// and the strategy can tell (Connected), and makes rec, if not nil, report
// its unsuccessful reconciles to it; it returns nil otherwise.
func startSampler(ctx context.Context, plan Plan, s Strategy, rec *Recorder) *sampler {
	if plan.SampleConnected <= 0 || s.Connected == nil {
		return nil
	}
	sm := &sampler{connected: s.Connected, open: s.BreakerOpen, period: plan.SampleConnected, done: make(chan struct{}), sampled: make(chan struct{}),
		downFrom: map[string]int64{}, openFrom: map[string]int64{}, a: Availability{SampleMs: plan.SampleConnected.Milliseconds(),
			FirstConnectedUnixMs: map[string]int64{}, NotConnected: map[string][][2]int64{},
			Failed: map[string][]int64{}, Requeued: map[string][]int64{}}}
	if s.BreakerOpen != nil {
		sm.a.BreakerOpen = map[string][][2]int64{}
	}
	names := plan.SampleClusters
	if len(names) == 0 {
		names = slices.Collect(maps.Keys(plan.Roles))
	}
	for _, name := range names {
		sm.keys = append(sm.keys, client.ObjectKey{Namespace: plan.Namespace, Name: name})
	}
	slices.SortFunc(sm.keys, func(a, b client.ObjectKey) int { return strings.Compare(a.Name, b.Name) })
	if rec != nil {
		rec.Observe(sm.outcome)
	}
	ctx, sm.cancel = context.WithCancel(ctx)
	go sm.run(ctx)
	return sm
}

func (sm *sampler) run(ctx context.Context) {
	defer close(sm.done)
	t := time.NewTicker(sm.period)
	defer t.Stop()
	for first := true; ; first = false {
		sm.sample(ctx)
		if first {
			close(sm.sampled)
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// sample asks about every cluster once.
func (sm *sampler) sample(ctx context.Context) {
	for _, k := range sm.keys {
		up := sm.connected(ctx, k)
		open := sm.open != nil && sm.open(k)
		now := time.Now().UnixMilli()
		sm.mu.Lock()
		sm.record(k.Name, up, now)
		if sm.open != nil {
			interval(sm.a.BreakerOpen, sm.openFrom, k.Name, open, now)
		}
		sm.mu.Unlock()
	}
}

// record adds one answer about cluster at now; sm.mu is held.
func (sm *sampler) record(cluster string, up bool, now int64) {
	if _, seen := sm.a.FirstConnectedUnixMs[cluster]; !seen {
		if up {
			sm.a.FirstConnectedUnixMs[cluster] = now
		}
		return
	}
	interval(sm.a.NotConnected, sm.downFrom, cluster, !up, now)
}

// interval adds one sample at now of a condition of cluster (not
// connected, breaker open) to its closed intervals done and its open ones
// from: a sample with the condition opens an interval, one without it
// closes the open one.
func interval(done map[string][][2]int64, from map[string]int64, cluster string, on bool, now int64) {
	since, open := from[cluster]
	switch {
	case on && !open:
		from[cluster] = now
	case !on && open:
		done[cluster] = append(done[cluster], [2]int64{since, now})
		delete(from, cluster)
	}
}

// downSince reports whether every cluster that was ever seen connected has
// been reported not connected at or after since (Unix ms).
func (sm *sampler) downSince(since int64) bool {
	sm.mu.Lock()
	defer sm.mu.Unlock()
	for _, k := range sm.keys {
		if _, seen := sm.a.FirstConnectedUnixMs[k.Name]; !seen {
			continue
		}
		if from, down := sm.downFrom[k.Name]; down && from >= since {
			continue
		}
		if !slices.ContainsFunc(sm.a.NotConnected[k.Name], func(iv [2]int64) bool { return iv[0] >= since }) {
			return false
		}
	}
	return true
}

// outcome is the Recorder's observer.
func (sm *sampler) outcome(cluster string, at time.Time, o Outcome) {
	sm.mu.Lock()
	defer sm.mu.Unlock()
	switch o {
	case Failed:
		sm.a.Failed[cluster] = append(sm.a.Failed[cluster], at.UnixMilli())
	case Requeued:
		sm.a.Requeued[cluster] = append(sm.a.Requeued[cluster], at.UnixMilli())
	}
}

// stop ends the sampling and returns what it recorded (nil for a nil
// sampler); open intervals end now.
func (sm *sampler) stop() *Availability {
	if sm == nil {
		return nil
	}
	sm.cancel()
	<-sm.done
	sm.mu.Lock()
	defer sm.mu.Unlock()
	now := time.Now().UnixMilli()
	for cluster, from := range sm.downFrom {
		sm.a.NotConnected[cluster] = append(sm.a.NotConnected[cluster], [2]int64{from, now})
	}
	for cluster, from := range sm.openFrom {
		sm.a.BreakerOpen[cluster] = append(sm.a.BreakerOpen[cluster], [2]int64{from, now})
	}
	sm.downFrom, sm.openFrom = map[string]int64{}, map[string]int64{}
	a := sm.a
	return &a
}
