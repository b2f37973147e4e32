package clustercache

import (
	"errors"
	"fmt"
	"time"

	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/clusterpool/clusterpool/breaker"
	"github.com/clusterpool/clusterpool/kube"
	"github.com/clusterpool/clusterpool/pool"
)

// NotConnectedError says a workload cluster cannot be used now. It matches
// both ErrClusterNotConnected (Cluster API's controllers test it, e.g. the
// Machine controller's NodeHealthy reason) and Err, the pool's error,
// whose sentinel says why: pool.ErrCircuitOpen (the breaker is open, or
// half-open with its probe out), pool.ErrWaitTimeout (a dial is in
// flight), pool.ErrDialFailed (the last dial failed, another is coming),
// each with a pool.RetryAfter (the next probe, the end of the dial in
// flight, the retry of the failed dial), pool.ErrRemoved (the pool
// holds nothing for the cluster: not admitted yet, filtered out, deleted),
// pool.ErrClosed (Shutdown), or, for a request on an established client,
// the request guard's kube.ErrClusterStopped, kube.ErrBulkheadFull,
// kube.ErrFirstByteTimeout or pool.ErrCircuitOpen.
type NotConnectedError struct {
	// Op is what failed, e.g. "getting client".
	Op string
	// Cluster names the Cluster object.
	Cluster client.ObjectKey
	// Err is the pool's error.
	Err error
}

// Error returns "<op> for cluster <ns/name>: connection to the workload
// cluster is down: <err>". It holds no credentials.
func (e *NotConnectedError) Error() string {
	return fmt.Sprintf("%s for cluster %s: %v: %v", e.Op, e.Cluster, ErrClusterNotConnected, e.Err)
}

// Unwrap returns ErrClusterNotConnected and Err, for errors.Is and
// errors.As (pool.RetryAfter finds the *pool.Error).
func (e *NotConnectedError) Unwrap() []error { return []error{ErrClusterNotConnected, e.Err} }

// notConnected returns the error of op while key has no client in the
// pool, whose state is st (closed: the pool is shut down). Its RetryAt
// (pool.RetryAfter) is when the cluster's state may have changed: an open
// breaker's next probe; the end of the dial or half-open probe in flight,
// at the latest dialTimeout from now (its deadline); after a failed dial
// that left the breaker closed, retryDelay (the drop-in's retry of it).
func notConnected(op string, key client.ObjectKey, st pool.ClusterState, closed bool, dialTimeout, retryDelay time.Duration) error {
	pe := &pool.Error{Kind: notConnectedKind(st, closed), Cluster: key.String()}
	now := time.Now()
	switch {
	case pe.Kind == pool.ErrCircuitOpen && st.NextProbe.After(now):
		pe.RetryAt = st.NextProbe
	case pe.Kind == pool.ErrCircuitOpen || pe.Kind == pool.ErrWaitTimeout:
		pe.RetryAt = now.Add(dialTimeout) // the probe is out, or due
	case pe.Kind == pool.ErrDialFailed:
		pe.RetryAt = now.Add(retryDelay)
	}
	return &NotConnectedError{Op: op, Cluster: key, Err: pe}
}

// recreated is the error for a client dialed for a Cluster deleted and
// created again under key since: the admission removes it and dials the
// new Cluster, within about the dial timeout.
func recreated(op string, key client.ObjectKey, dialTimeout time.Duration) error {
	pe := &pool.Error{Kind: pool.ErrRemoved, Cluster: key.String(), RetryAt: time.Now().Add(dialTimeout)}
	return &NotConnectedError{Op: op, Cluster: key, Err: fmt.Errorf("the Cluster was created again: %w", pe)}
}

// notConnectedKind picks the pool sentinel that says why a cluster in
// state st has no client.
func notConnectedKind(st pool.ClusterState, closed bool) error {
	switch {
	case closed:
		return pool.ErrClosed
	case !st.Known:
		return pool.ErrRemoved
	case st.Breaker != breaker.StateClosed: // open, or half-open with its probe out
		return pool.ErrCircuitOpen
	case st.Dialing:
		return pool.ErrWaitTimeout
	default:
		return pool.ErrDialFailed
	}
}

// guardErrors are the errors of a request on an established client that
// say the cluster is not reachable now.
var guardErrors = []error{pool.ErrCircuitOpen, pool.ErrClosed, kube.ErrClusterStopped, kube.ErrBulkheadFull, kube.ErrFirstByteTimeout}

// requestError returns err, made to match ErrClusterNotConnected too when
// it is one of guardErrors.
func requestError(key client.ObjectKey, err error) error {
	if err == nil || errors.Is(err, ErrClusterNotConnected) {
		return err
	}
	for _, g := range guardErrors {
		if errors.Is(err, g) {
			return &NotConnectedError{Op: "request", Cluster: key, Err: err}
		}
	}
	return err
}
