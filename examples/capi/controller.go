package main

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"go.opentelemetry.io/otel"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/clusterpool/clusterpool/kube"
	"github.com/clusterpool/clusterpool/kube/shard"
	"github.com/clusterpool/clusterpool/pool"
)

// ProbeCondition is the condition the reconciler writes on each Cluster,
// after Cluster API's RemoteConnectionProbe.
const ProbeCondition = clusterv1.ClusterRemoteConnectionProbeCondition

// resync is how often a connected cluster is reconciled again.
const resync = 5 * time.Second

// Reconciler takes a workload client from the pool for each Cluster, reads
// and writes a ConfigMap it owns in the workload cluster, and reports the
// connection on the Cluster's RemoteConnectionProbe condition.
type Reconciler struct {
	Client client.Client // management cluster
	Pool   *pool.Pool[client.ObjectKey, *kube.Cluster]
	Stats  *Stats
	// Clients, if set, hands out the workload clients instead of Pool (a
	// shard.Getter with -replicas: another replica's cluster is skipped).
	Clients interface {
		Get(ctx context.Context, key client.ObjectKey) (*kube.Cluster, error)
	}
}

// Reconcile handles one Cluster.
func (r *Reconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	ctx, span := otel.Tracer("clusterpool-demo").Start(ctx, "Reconcile "+req.String())
	defer span.End()
	var cl clusterv1.Cluster
	if err := r.Client.Get(ctx, req.NamespacedName, &cl); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	get := r.Pool.Get
	if r.Clients != nil {
		get = r.Clients.Get
	}
	start := time.Now()
	wc, err := get(pool.Requeued(ctx), req.NamespacedName) // kube.Source brings it back
	if errors.Is(err, shard.ErrNotOwned) {
		return ctrl.Result{}, nil // the owning replica reconciles it
	}
	r.Stats.get(req.NamespacedName, err, time.Since(start))
	if err != nil {
		if perr := r.setCondition(ctx, &cl, metav1.ConditionFalse, reason(err), err.Error()); perr != nil {
			return ctrl.Result{}, perr
		}
		return kube.Requeue(err)
	}
	start = time.Now()
	nodes, err := r.work(ctx, wc)
	r.Stats.request(req.NamespacedName, time.Since(start))
	if errors.Is(err, kube.ErrThrottled) {
		// Back-pressure, not a failure: the cluster works and asked for
		// fewer requests. The condition stays as it is; back after its
		// Retry-After.
		return kube.Requeue(err)
	}
	if err != nil {
		// No Report: the cluster's transport reported the failure itself
		// (passive health, kube.RequestOptions).
		if perr := r.setCondition(ctx, &cl, metav1.ConditionFalse, "WorkloadError", err.Error()); perr != nil {
			return ctrl.Result{}, perr
		}
		if res, rerr := kube.Requeue(err); rerr == nil {
			return res, nil // rejected by the transport (open breaker, bulkhead): back after RetryAfter
		}
		return ctrl.Result{}, nil
	}
	r.Stats.reconciled(req.NamespacedName)
	msg := fmt.Sprintf("connected through clusterpool; %d nodes; breaker %v", nodes, r.Pool.State(req.NamespacedName).Breaker)
	if err := r.setCondition(ctx, &cl, metav1.ConditionTrue, "Connected", msg); err != nil {
		return ctrl.Result{}, err
	}
	return ctrl.Result{RequeueAfter: resync}, nil
}

// work is the reconciler's business in the workload cluster: make sure its
// ConfigMap exists (uncached write), read it back from the cache, and count
// the Nodes.
func (r *Reconciler) work(ctx context.Context, wc *kube.Cluster) (int, error) {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "clusterpool-demo"},
		Data: map[string]string{"managed-by": "clusterpool-demo"}}
	var got corev1.ConfigMap
	if err := wc.Client.Get(ctx, client.ObjectKeyFromObject(cm), &got); apierrors.IsNotFound(err) {
		if err := wc.Uncached.Create(ctx, cm); err != nil && !apierrors.IsAlreadyExists(err) {
			return 0, err
		}
	} else if err != nil {
		return 0, err
	}
	var nodes corev1.NodeList
	if err := wc.Uncached.List(ctx, &nodes); err != nil {
		return 0, err
	}
	return len(nodes.Items), nil
}

func reason(err error) string {
	switch {
	case errors.Is(err, pool.ErrCircuitOpen):
		return "CircuitOpen"
	case errors.Is(err, pool.ErrWaitTimeout):
		return "Connecting"
	case errors.Is(err, pool.ErrDialFailed):
		return "DialFailed"
	}
	return "Error"
}

func (r *Reconciler) setCondition(ctx context.Context, cl *clusterv1.Cluster, status metav1.ConditionStatus, reason, msg string) error {
	before := cl.DeepCopy()
	changed := meta.SetStatusCondition(&cl.Status.Conditions, metav1.Condition{
		Type: ProbeCondition, Status: status, Reason: reason, Message: msg, ObservedGeneration: cl.Generation,
	})
	if !changed {
		return nil
	}
	return client.IgnoreNotFound(r.Client.Status().Patch(ctx, cl, client.MergeFrom(before)))
}

// Stats is what the demo measures per cluster. Safe for concurrent use.
type Stats struct {
	mu    sync.Mutex
	start time.Time
	per   map[client.ObjectKey]*clusterStats
}

type clusterStats struct {
	reconciles, waits, rejections, failures, dials int
	first, last                                    time.Time     // successful reconciles
	maxGet                                         time.Duration // longest a Get blocked a worker
	maxRequest                                     time.Duration // longest a worker was blocked in requests to the workload cluster
	recoveries                                     []time.Duration
	healedAt                                       time.Time // when the network healed, until the next success
}

// NewStats starts the clock.
func NewStats() *Stats { return &Stats{start: time.Now(), per: map[client.ObjectKey]*clusterStats{}} }

func (s *Stats) of(k client.ObjectKey) *clusterStats {
	c, ok := s.per[k]
	if !ok {
		c = &clusterStats{}
		s.per[k] = c
	}
	return c
}

// request records how long a reconcile's requests to the workload cluster
// blocked its worker.
func (s *Stats) request(k client.ObjectKey, took time.Duration) {
	s.mu.Lock()
	defer s.mu.Unlock()
	c := s.of(k)
	c.maxRequest = max(c.maxRequest, took)
}

func (s *Stats) get(k client.ObjectKey, err error, took time.Duration) {
	s.mu.Lock()
	defer s.mu.Unlock()
	c := s.of(k)
	c.maxGet = max(c.maxGet, took)
	switch {
	case err == nil:
	case errors.Is(err, pool.ErrWaitTimeout):
		c.waits++
	case errors.Is(err, pool.ErrCircuitOpen):
		c.rejections++
	default:
		c.failures++
	}
}

func (s *Stats) reconciled(k client.ObjectKey) {
	s.mu.Lock()
	defer s.mu.Unlock()
	c := s.of(k)
	now := time.Now()
	c.reconciles++
	if c.first.IsZero() {
		c.first = now
	}
	c.last = now
	if !c.healedAt.IsZero() {
		c.recoveries = append(c.recoveries, now.Sub(c.healedAt))
		c.healedAt = time.Time{}
	}
}

func (s *Stats) dialed(k client.ObjectKey) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.of(k).dials++
}

// healed records that k's network came back at t.
func (s *Stats) healed(k client.ObjectKey, t time.Time) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.of(k).healedAt = t
}

// snapshot returns a copy of k's figures.
func (s *Stats) snapshot(k client.ObjectKey) clusterStats {
	s.mu.Lock()
	defer s.mu.Unlock()
	c := *s.of(k)
	c.recoveries = append([]time.Duration(nil), c.recoveries...)
	return c
}
