package sim

import (
	"sync"
	"time"

	"golang.org/x/time/rate"
	"k8s.io/client-go/util/workqueue"
	"sigs.k8s.io/controller-runtime/pkg/controller/priorityqueue"
)

// newQueue returns a controller's queue as controller-runtime builds it
// with its default rate limiter: its priority queue (the default since
// v0.22; Cluster API v1.14's ClusterCache runs on it too), or, if the
// run's Config.LegacyQueue is set, the client-go rate-limiting workqueue
// of older releases. Every controller of a run gets the same kind.
//
// They differ in how a requeue meets a later add: the priority queue keeps
// one entry per item, ready at the earliest of the times asked, so a
// reconcile that returned RequeueAfter and whose object is then added by an
// event runs once; the workqueue keeps the delayed add apart and reconciles
// the object again when it fires. Every item has one priority here: the
// model does not use controller-runtime's low priority for the initial
// list (bench/peers runs the real controllers, priorities included).
func (w *World) newQueue() workqueue.TypedRateLimitingInterface[int] {
	if w.legacyQueue {
		return workqueue.NewTypedRateLimitingQueue(defaultControllerRateLimiter[int](w))
	}
	return priorityqueue.New("", func(o *priorityqueue.Opts[int]) { // "": no metrics
		o.RateLimiter = defaultControllerRateLimiter[int](w)
	})
}

// defaultControllerRateLimiter is controller-runtime's default
// (workqueue.DefaultTypedControllerRateLimiter: per-item exponential 5 ms to
// 1000 s, max'ed with a 10 qps / burst 100 bucket), with the world's scale
// applied to its durations and rate.
func defaultControllerRateLimiter[T comparable](w *World) workqueue.TypedRateLimiter[T] {
	return workqueue.NewTypedMaxOfRateLimiter(
		workqueue.NewTypedItemExponentialFailureRateLimiter[T](w.Scaled(5*time.Millisecond), w.Scaled(1000*time.Second)),
		&workqueue.TypedBucketRateLimiter[T]{Limiter: rate.NewLimiter(rate.Limit(10/w.scale), 100)},
	)
}

// stopWorkers ends the n workers serving q, then shuts q down. Rather than
// shutting q down under them, it hands each worker a stop item (a negative
// key, which workers return on): controller-runtime v0.24's priority queue,
// handing a ready item to a worker that ShutDown has just released from
// Get, blocks on that send holding its lock, and every later Done waits
// forever (fixed in v0.25; the go.mod floor is v0.24.1). With no worker
// left in Get, ShutDown hands out nothing.
func stopWorkers(q workqueue.TypedRateLimitingInterface[int], n int, wg *sync.WaitGroup) {
	for i := range n {
		q.Add(-1 - i)
	}
	wg.Wait()
	q.ShutDown()
}
