package workload

import (
	"context"
	"maps"
	"slices"
	"time"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/clusterpool/clusterpool/bench/peers/workload/idle"
	"github.com/clusterpool/clusterpool/bench/peers/workload/load"
)

// loadTimeout bounds each Get of the load window, as Cluster API's REST
// timeout of workload clusters does (10 s).
const loadTimeout = 10 * time.Second

// faultsAckTimeout bounds the wait for the driver to inject its faults.
const faultsAckTimeout = 2 * time.Minute

// runSampler starts the sampler of a whole run (startSampler), unless the
// run samples only in its dead-cluster detection (Plan.DetectWithin).
func runSampler(ctx context.Context, plan Plan, s Strategy, rec *Recorder) *sampler {
	if plan.DetectWithin > 0 {
		return nil
	}
	return startSampler(ctx, plan, s, rec)
}

// afterIdle runs what a scale run (Plan.Idle) does after its idle window:
// the load window (Plan.LoadRate), whose summaries it adds to f.Timings,
// and the dead-cluster detection (Plan.DetectWithin), whose samples become
// f.Availability.
func afterIdle(ctx context.Context, plan Plan, s Strategy, f *Figures) {
	if plan.Idle <= 0 {
		return
	}
	if plan.LoadRate > 0 {
		res := load.Run(ctx, plan.LoadRate, plan.LoadWindow, loadTimeout, loadGet(plan, s))
		if f.Timings == nil {
			f.Timings = map[string]Dist{}
		}
		for name, d := range res.Dists() {
			f.Timings[name] = d
		}
	}
	if plan.DetectWithin > 0 {
		f.Availability = detect(ctx, plan, s, func() { idle.Await(idle.Faults, faultsAckTimeout) })
	}
}

// loadGet is the load window's call k: get the client of the k-th cluster
// (by name, in turn) from the strategy, and Get that cluster's first
// object in its workload cluster, uncached, as the reconciler reads it.
func loadGet(plan Plan, s Strategy) func(context.Context, int) error {
	names := slices.Sorted(maps.Keys(plan.Roles))
	return func(ctx context.Context, k int) error {
		name := names[k%len(names)]
		c, err := s.Get(ctx, client.ObjectKey{Namespace: plan.Namespace, Name: name})
		if err != nil {
			return err
		}
		return c.Get(ctx, client.ObjectKey{Namespace: plan.WorkloadNamespace, Name: ObjectName(name, 0)}, &corev1.ConfigMap{})
	}
}

// detect samples the plan's sampled clusters, calls faults once each was
// asked once (the driver injects its faults meanwhile), and samples until
// every one seen connected was reported not connected since, or
// DetectWithin passed after faults returned.
func detect(ctx context.Context, plan Plan, s Strategy, faults func()) *Availability {
	sm := startSampler(ctx, plan, s, nil)
	if sm == nil {
		return nil
	}
	<-sm.sampled
	since := time.Now().UnixMilli()
	faults()
	bound := time.NewTimer(plan.DetectWithin)
	defer bound.Stop()
	tick := time.NewTicker(plan.SampleConnected)
	defer tick.Stop()
	for !sm.downSince(since) {
		select {
		case <-ctx.Done():
			return sm.stop()
		case <-bound.C:
			return sm.stop()
		case <-tick.C:
		}
	}
	return sm.stop()
}
