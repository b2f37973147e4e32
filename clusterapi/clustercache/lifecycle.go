package clustercache

import (
	"context"
	"errors"
	"sync"

	"k8s.io/client-go/util/workqueue"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/clusterpool/clusterpool/pool"
)

// Start runs the prober, the kubeconfig Secret watcher and the retry of
// failed dials until ctx is done or Shutdown is called, then closes the
// pool. SetupWithManager adds it to the manager.
func (cc *clusterCache) Start(ctx context.Context) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	go func() {
		select {
		case <-cc.stop:
			cancel()
		case <-ctx.Done():
		}
	}()
	defer cc.startTelemetry(ctx)()
	errs := make([]error, 2)
	var wg sync.WaitGroup
	wg.Go(func() { errs[0] = cc.prober.Start(ctx) })
	wg.Go(func() { errs[1] = cc.secrets.Start(ctx) })
	wg.Go(func() { cc.retry(ctx) })
	wg.Wait()
	cc.shutdownPool()
	return errors.Join(errs...)
}

// NeedLeaderElection reports false: the runnable serves whichever replica
// runs it. The pool dials only what the admission controller (which needs
// the lease, like Cluster API's "clustercache" controller) admits.
func (cc *clusterCache) NeedLeaderElection() bool { return false }

// retry dials again, after retryDelay, an admitted cluster whose dial
// failed while its breaker stayed closed (pool.DialFailed): nothing else
// would, since no caller dials (Cluster API's ClusterCache retries every
// ConnectionCreationRetryInterval). Once the breaker opens, the pool
// probes the cluster itself, with its jittered doubling.
func (cc *clusterCache) retry(ctx context.Context) {
	q := workqueue.NewTypedDelayingQueueWithConfig(workqueue.TypedDelayingQueueConfig[client.ObjectKey]{})
	events := cc.pool.Subscribe(ctx)
	var wg sync.WaitGroup
	wg.Go(func() {
		for {
			key, shutdown := q.Get()
			if shutdown {
				return
			}
			cc.redial(key)
			q.Done(key)
		}
	})
	defer wg.Wait()
	defer q.ShutDown()
	for {
		select {
		case <-ctx.Done():
			return
		case ev, ok := <-events:
			if !ok {
				return
			}
			if ev.Type == pool.DialFailed {
				q.AddAfter(ev.Key, cc.retryDelay())
			}
		}
	}
}

// redial asks the pool to connect key if it is still admitted: the pool
// dials it only if it is idle and its breaker closed (pool.Pool.Connect),
// so a cluster connected, dialing or backing off meanwhile is left alone.
func (cc *clusterCache) redial(key client.ObjectKey) {
	if cc.admission.Admitted(key) {
		cc.pool.Connect(key)
	}
}

// Reconcile runs the admission decision for one Cluster and, if the
// Cluster is admitted and a dial starts or is in flight, waits for it to
// end (at most the dial timeout), as Cluster API's Reconcile connects
// synchronously: a test that calls it directly then finds the cluster
// connected. The manager's controller does not call it (it runs the
// admission alone, which never waits).
func (cc *clusterCache) Reconcile(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	wctx, cancel := context.WithTimeout(ctx, cc.dialTimeout)
	defer cancel()
	events := cc.pool.Subscribe(wctx) // before the dial starts: its end is not missed
	res, err := cc.admission.Reconcile(ctx, req)
	if err != nil || !cc.admission.Admitted(req.NamespacedName) {
		return res, err
	}
	for cc.pool.State(req.NamespacedName).Dialing {
		select {
		case <-wctx.Done():
			return res, nil
		case _, ok := <-events:
			if !ok {
				return res, nil
			}
		}
	}
	return res, nil
}
