package clustercache

import (
	"context"
	"time"

	"k8s.io/client-go/util/workqueue"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	"sigs.k8s.io/controller-runtime/pkg/source"

	"github.com/clusterpool/clusterpool/pool"
)

// GetClusterSource returns a source that enqueues mapFunc's requests for
// an admitted Cluster when it connects, when it disconnects, and, for each
// WatchForProbeFailure(d) option, once when d has passed since its last
// successful probe (shouldSendEvent). As in Cluster API, which checks after
// each of its reconciles, that is checked after each probe of the
// cluster: a health probe of a connected cluster (every ProbeInterval), or
// a connect attempt (each is a pool event). A healthy cluster therefore
// has no such event even when d is shorter than ProbeInterval, and a
// cluster probed while the source was busy is checked once it is free.
// mapFunc receives the *clusterv1.Cluster read from the manager's cache; a
// Cluster that is gone enqueues nothing. Only admitted Clusters have
// events: WatchFilterValue and ClusterFilter apply through the admission,
// as in Cluster API. mapFunc runs on the source's own goroutine, never
// under a lock; a panic in it is recovered and logged.
func (cc *clusterCache) GetClusterSource(controllerName string, mapFunc func(ctx context.Context, cluster client.Object) []ctrl.Request, opts ...GetClusterSourceOption) source.Source {
	var durations []time.Duration
	for _, o := range opts {
		switch d := o.(type) {
		case WatchForProbeFailure:
			durations = append(durations, time.Duration(d))
		case *WatchForProbeFailure:
			durations = append(durations, time.Duration(*d))
		}
	}
	return source.Func(func(ctx context.Context, q workqueue.TypedRateLimitingInterface[reconcile.Request]) error {
		s := &clusterSource{cc: cc, controller: controllerName, mapFunc: mapFunc, durations: durations, q: q,
			lastSent: map[client.ObjectKey]time.Time{}, connected: map[client.ObjectKey]bool{}, probed: newKeySet()}
		events := cc.pool.Subscribe(ctx)
		stop := func() {}
		if len(durations) > 0 {
			stop = cc.probes.listen(s.probed)
		}
		go func() {
			defer stop()
			s.run(ctx, events)
		}()
		return nil
	})
}

// clusterSource is one started GetClusterSource source. Its maps are its
// goroutine's alone.
type clusterSource struct {
	cc         *clusterCache
	controller string
	mapFunc    func(ctx context.Context, cluster client.Object) []ctrl.Request
	durations  []time.Duration
	q          workqueue.TypedRateLimitingInterface[reconcile.Request]
	// lastSent is when an event was last sent per cluster (Cluster API's
	// lastEventSentTimeByCluster); connected is each cluster's state as
	// the last event told it.
	lastSent  map[client.ObjectKey]time.Time
	connected map[client.ObjectKey]bool
	// probed holds the clusters probed since the source last checked them.
	probed *keySet
}

// run sends events until ctx is done or the pool closes: on each pool
// event, and after each health probe.
func (s *clusterSource) run(ctx context.Context, events <-chan pool.Event[client.ObjectKey]) {
	for {
		select {
		case <-ctx.Done():
			return
		case ev, ok := <-events:
			if !ok {
				return
			}
			s.onEvent(ctx, ev)
		case <-s.probed.ready:
			for _, key := range s.probed.take() {
				if s.cc.admitted(key) {
					s.maybeSend(ctx, key, time.Now(), false, false)
				}
			}
		}
	}
}

// onEvent handles one pool event. Events of a cluster coalesce in the
// subscription, but each carries the cluster's state after it, so a
// connect or disconnect is never missed.
func (s *clusterSource) onEvent(ctx context.Context, ev pool.Event[client.ObjectKey]) {
	was := s.connected[ev.Key]
	didConnect := ev.Type == pool.Connected || (ev.Connected && !was)
	didDisconnect := ev.Type == pool.Disconnected || (!ev.Connected && was)
	s.connected[ev.Key] = ev.Connected
	if !s.cc.admitted(ev.Key) {
		// Deleted or filtered out: Cluster API sends nothing on cleanup
		// and forgets the cluster's last event.
		delete(s.lastSent, ev.Key)
		delete(s.connected, ev.Key)
		return
	}
	s.maybeSend(ctx, ev.Key, ev.Time, didConnect, didDisconnect)
}

// maybeSend sends an event for key if shouldSendEvent says so.
func (s *clusterSource) maybeSend(ctx context.Context, key client.ObjectKey, now time.Time, didConnect, didDisconnect bool) {
	st := s.cc.pool.State(key)
	reasons := shouldSendEvent(now, st.LastProbeSuccess, s.lastSent[key], didConnect, didDisconnect, s.durations)
	if len(reasons) == 0 {
		return
	}
	s.lastSent[key] = now
	s.send(ctx, key, reasons)
}

// send enqueues mapFunc's requests for the Cluster named key, read from the
// manager's cache.
func (s *clusterSource) send(ctx context.Context, key client.ObjectKey, reasons []string) {
	cluster := &clusterv1.Cluster{}
	if err := s.cc.clusters.Get(ctx, key, cluster); err != nil {
		s.cc.log.V(4).Info("not sending Cluster event: cannot read the Cluster", "cluster", key.String(), "error", err.Error())
		return
	}
	defer func() {
		if r := recover(); r != nil {
			s.cc.log.Error(nil, "GetClusterSource mapFunc panicked", "targetController", s.controller, "cluster", key.String(), "panic", r)
		}
	}()
	s.cc.log.V(6).Info("Sending Cluster event", "targetController", s.controller, "cluster", key.String(), "reasons", reasons)
	for _, r := range s.mapFunc(ctx, cluster) {
		s.q.Add(r)
	}
}
