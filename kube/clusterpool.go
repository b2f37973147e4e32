package kube

import (
	"context"
	"sync/atomic"

	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/clusterpool/clusterpool/pool"
)

// ClusterPool is what kube's pieces use of a pool of Clusters:
// *pool.Pool[client.ObjectKey, *Cluster] (what NewPool returns) implements
// it; tests may pass a fake. Get is not part of it: kube never waits for a
// dial, it asks for one with Connect or Redial. Each of those is one
// decision of the pool's, taken under its lock: call it without reading
// State first.
type ClusterPool interface {
	// Peek returns the cached client without dialing.
	Peek(key client.ObjectKey) (*Cluster, bool)
	// Keys lists the clusters the pool holds state for.
	Keys() []client.ObjectKey
	// State returns a cluster's breaker state and next probe.
	State(key client.ObjectKey) pool.ClusterState
	// Report feeds an outcome of using the cluster into its breaker.
	Report(key client.ObjectKey, err error)
	// Remove forgets the cluster and stops its client: for a cluster that
	// leaves (deleted, refused, owned by another replica).
	Remove(key client.ObjectKey)
	// Connect dials the cluster, off the caller's path, if it is idle: not
	// connected, not dialing, its breaker closed (pool.Pool.Connect).
	Connect(key client.ObjectKey)
	// Redial replaces the cluster's client or dial in flight by a new dial,
	// keeping its breaker's history (pool.Pool.Redial).
	Redial(key client.ObjectKey)
	// Probe brings an open breaker's probe forward (pool.Pool.Probe).
	Probe(key client.ObjectKey)
	// Subscribe returns the pool's events until ctx is done.
	Subscribe(ctx context.Context) <-chan pool.Event[client.ObjectKey]
	// SubscribeRequeue is Subscribe (kept for compatibility: which Gets
	// are requeued by events is chosen per call, with pool.Requeued).
	SubscribeRequeue(ctx context.Context) <-chan pool.Event[client.ObjectKey]
}

var _ ClusterPool = (*pool.Pool[client.ObjectKey, *Cluster])(nil)

// poolRef is the pool a Dialer serves, set once by NewPool; the clusters'
// transports read it for passive health. The zero value holds no pool.
type poolRef struct{ p atomic.Pointer[ClusterPool] }

func (r *poolRef) set(p ClusterPool) { r.p.Store(&p) }

// get returns the pool, or nil before one was set.
func (r *poolRef) get() ClusterPool {
	if p := r.p.Load(); p != nil {
		return *p
	}
	return nil
}
