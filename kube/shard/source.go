package shard

import (
	"context"

	"k8s.io/client-go/util/workqueue"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	"sigs.k8s.io/controller-runtime/pkg/source"
)

// MapFunc lists the requests to enqueue for an ownership change.
type MapFunc func(ctx context.Context, ev Event) []reconcile.Request

// ClusterRequest is the MapFunc of a controller that reconciles the
// Cluster objects themselves: a Gained cluster's own key is enqueued; a Lost
// one needs no reconcile here.
func ClusterRequest(_ context.Context, ev Event) []reconcile.Request {
	if ev.Type != Gained {
		return nil
	}
	return []reconcile.Request{{NamespacedName: ev.Key}}
}

// Source returns a controller-runtime source, for
// builder.WatchesRawSource, that enqueues mapFn's requests for every
// ownership change of s: with ClusterRequest, a cluster is reconciled as
// soon as it is gained, although its object's events were dropped by
// Predicate while another replica owned it.
func Source(s *Sharder, mapFn MapFunc) source.Source {
	return source.Func(func(ctx context.Context, q workqueue.TypedRateLimitingInterface[reconcile.Request]) error {
		events := s.Subscribe(ctx)
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

// KeyOf names the cluster an object belongs to.
type KeyOf func(obj client.Object) client.ObjectKey

// ObjectKeyOf is the KeyOf of Cluster objects: the object's own key.
func ObjectKeyOf(obj client.Object) client.ObjectKey { return client.ObjectKeyFromObject(obj) }

// Predicate returns a controller-runtime predicate that passes the events
// of objects whose cluster (keyOf) this replica owns at the time of the
// event, and drops the others: use ObjectKeyOf for Cluster objects.
func (s *Sharder) Predicate(keyOf KeyOf) predicate.Predicate {
	owned := func(obj client.Object) bool { return obj != nil && s.Owns(keyOf(obj)) }
	return predicate.Funcs{
		CreateFunc:  func(e event.CreateEvent) bool { return owned(e.Object) },
		DeleteFunc:  func(e event.DeleteEvent) bool { return owned(e.Object) },
		UpdateFunc:  func(e event.UpdateEvent) bool { return owned(e.ObjectNew) },
		GenericFunc: func(e event.GenericEvent) bool { return owned(e.Object) },
	}
}
