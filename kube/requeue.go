package kube

import (
	"errors"

	ctrl "sigs.k8s.io/controller-runtime"

	"github.com/clusterpool/clusterpool/pool"
)

// Requeue maps the error of a pool Get, or of a request on a Cluster's
// clients, to a reconcile result: a cluster that is not ready yet
// (ErrWaitTimeout, ErrCircuitOpen, ErrDialFailed, ErrBulkheadFull,
// ErrClusterStopped) is a requeue after pool.RetryAfter with no error, as
// Cluster API requeues on ErrClusterNotConnected: controller-runtime's rate
// limiter is not involved (its exponential backoff would park the object
// long after the cluster is back), and the failure stays visible in the
// pool's State, events and metrics. nil is an empty result; every other
// error (ErrFirstByteTimeout included: a failure of a request the cluster
// accepted) is returned as it is.
func Requeue(err error) (ctrl.Result, error) {
	if err == nil {
		return ctrl.Result{}, nil
	}
	if errors.Is(err, pool.ErrWaitTimeout) || errors.Is(err, pool.ErrCircuitOpen) || errors.Is(err, pool.ErrDialFailed) ||
		errors.Is(err, ErrBulkheadFull) || errors.Is(err, ErrClusterStopped) {
		if d, ok := pool.RetryAfter(err); ok {
			return ctrl.Result{RequeueAfter: d}, nil
		}
	}
	return ctrl.Result{}, err
}
