package shard

import (
	"context"
	"time"

	"sigs.k8s.io/controller-runtime/pkg/client"
)

// Pool is what a Sharder does to the clusters it loses and gains. Both
// methods must return quickly: Remove runs on the Sharder's goroutine
// (before any other replica may own the cluster), Warm on a goroutine of
// its own per batch of gained clusters.
type Pool interface {
	// Remove drops the cluster's client and stops its informers.
	Remove(key client.ObjectKey)
	// Warm starts dialing the cluster without waiting for the dial.
	Warm(key client.ObjectKey)
}

// ClientPool is a pool of clients of type C, such as
// *pool.Pool[client.ObjectKey, *kube.Cluster].
type ClientPool[C any] interface {
	Get(ctx context.Context, key client.ObjectKey) (C, error)
	Remove(key client.ObjectKey)
}

// connector is a pool that can start a dial without a caller.
type connector interface {
	Connect(key client.ObjectKey)
}

// warmWait bounds the Get that starts a dial: the pool's dial goes on after
// the Get gives up, and its Connected event enqueues the cluster.
const warmWait = time.Millisecond

// PoolOf adapts a client pool to Pool. Warm calls p's Connect(key) method
// if it has one (*pool.Pool's dials the cluster unless it is connected,
// dialing or backing off), and otherwise starts the dial with a Get under
// a 1 ms context.
func PoolOf[C any](p ClientPool[C]) Pool { return clientPool[C]{p} }

type clientPool[C any] struct{ p ClientPool[C] }

func (c clientPool[C]) Remove(key client.ObjectKey) { c.p.Remove(key) }

func (c clientPool[C]) Warm(key client.ObjectKey) {
	if cn, ok := c.p.(connector); ok {
		cn.Connect(key)
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), warmWait)
	defer cancel()
	c.p.Get(ctx, key) //nolint:errcheck // only starts the dial
}
