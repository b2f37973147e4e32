package kube

import (
	"context"

	"k8s.io/client-go/util/workqueue"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	"sigs.k8s.io/controller-runtime/pkg/source"

	"github.com/clusterpool/clusterpool/pool"
)

// MapFunc lists the requests to enqueue when a cluster's state changes.
type MapFunc func(ctx context.Context, ev pool.Event[client.ObjectKey]) []reconcile.Request

// ClusterRequest is the MapFunc of a controller that reconciles the
// Cluster objects themselves: it enqueues the cluster's own key.
func ClusterRequest(_ context.Context, ev pool.Event[client.ObjectKey]) []reconcile.Request {
	return []reconcile.Request{{NamespacedName: ev.Key}}
}

// Source returns a controller-runtime source that enqueues mapFn's requests
// on every pool event (Connected, Disconnected and breaker transitions), for
// builder.WatchesRawSource: the equivalent of Cluster API's
// GetClusterSource, so that controllers do not poll. Events of one cluster
// are coalesced while the source is busy (see pool.Pool.Subscribe); the
// latest one is never lost. Reconcilers of a controller that watches it
// should call Get with pool.Requeued(ctx): such a Get never waits blindly
// for a dial and tells its caller to come back at the latest the dial can
// end, counting on the source's enqueue to bring it back when it does
// (mapFn must therefore list every request that got ErrWaitTimeout for the
// cluster). Other callers of the pool keep their MaxWait waits.
func Source(p ClusterPool, mapFn MapFunc) source.Source {
	return source.Func(func(ctx context.Context, q workqueue.TypedRateLimitingInterface[reconcile.Request]) error {
		events := p.SubscribeRequeue(ctx)
		go func() {
			for ev := range events {
				for _, r := range mapFn(ctx, ev) {
					q.Add(r)
				}
			}
		}()
		return nil
	})
}
