package kube

import (
	"errors"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"

	ctrl "sigs.k8s.io/controller-runtime"

	"github.com/clusterpool/clusterpool/pool"
)

// Requeue maps the error of a pool Get, or of a request on a Cluster's
// clients, to a reconcile result: a cluster that is not ready yet
// (ErrWaitTimeout, ErrCircuitOpen, ErrDialFailed, ErrBulkheadFull,
// ErrClusterStopped) or asked for fewer requests (ErrThrottled, a counted
// request's 429 with a Retry-After; or a 429 whose Retry-After client-go's
// own retries ran out on, its TooManyRequests StatusError) is a
// requeue after pool.RetryAfter (the server's Retry-After) with no error, as
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
		errors.Is(err, ErrBulkheadFull) || errors.Is(err, ErrClusterStopped) || errors.Is(err, ErrThrottled) {
		if d, ok := pool.RetryAfter(err); ok {
			return ctrl.Result{RequeueAfter: d}, nil
		}
	}
	if s, ok := apierrors.SuggestsClientDelay(err); ok && apierrors.IsTooManyRequests(err) && s > 0 {
		return ctrl.Result{RequeueAfter: time.Duration(s) * time.Second}, nil
	}
	return ctrl.Result{}, err
}
