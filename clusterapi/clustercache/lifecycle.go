package clustercache

import (
	"context"

	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/clusterpool/clusterpool/kube"
)

// Start runs the prober, the kubeconfig Secret watcher and the
// admission's retries (one kube.Reconciler, whose events also feed the
// metrics) and the trace export until ctx is done or Shutdown is called,
// then closes the pool and flushes the traces. SetupWithManager adds it to
// the manager.
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
	cc.traces.start(ctx, cc.log)
	defer cc.traces.stop(cc.log)
	r := kube.Reconciler{Secrets: cc.secrets, Prober: cc.prober, Admission: cc.admission,
		OnSubscribed: func() { cc.metrics.held(cc.pool) },
		OnEvent:      cc.metrics.event}
	err := r.Start(ctx)
	cc.shutdownPool()
	return err
}

// NeedLeaderElection reports false: the runnable serves whichever replica
// runs it. The pool dials only what the admission controller (which needs
// the lease, like Cluster API's "clustercache" controller) admits.
func (cc *clusterCache) NeedLeaderElection() bool { return false }

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
