package workload

import (
	"context"
	"fmt"
	"strconv"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
)

// Strategy is how the reconciler gets a workload cluster's client: the
// peer under test, used the way its Cluster API callers use it.
type Strategy struct {
	// Get returns the cluster's client for reading and writing a ConfigMap
	// (Cluster API reads ConfigMaps uncached).
	Get func(ctx context.Context, cluster client.ObjectKey) (client.Client, error)
	// Result maps a Get error to what the reconciler returns, as the
	// strategy's callers in Cluster API do.
	Result func(err error) (ctrl.Result, error)
	// Report, if set, is told the outcome of using a client.
	Report func(cluster client.ObjectKey, err error)
	// WorkResult, if set, maps an error of the requests made with the
	// client to what the reconciler returns; unset, the error is returned.
	WorkResult func(err error) (ctrl.Result, error)
	// Connected, if set, reports whether the strategy holds a connected
	// client of the cluster now (without dialing); -sample-connected asks
	// it.
	Connected func(ctx context.Context, cluster client.ObjectKey) bool
	// BreakerOpen, if set, reports whether the strategy's circuit breaker
	// for the cluster is open or half-open now; -sample-connected asks it
	// too (Availability.BreakerOpen).
	BreakerOpen func(cluster client.ObjectKey) bool
}

// Reconciler reconciles the objects of the plan: each reconcile reads its
// management ConfigMap from the manager's cache, gets its cluster's client
// from the strategy, reads (or creates) and updates the ConfigMap of the
// same name in the workload cluster, and holds the worker for the rest of
// Plan.Work.
type Reconciler struct {
	Mgmt     client.Reader
	Strategy Strategy
	Plan     Plan
	Rec      *Recorder
	// Timings, if not nil, receives the phases of successful reconciles.
	Timings *Timings
}

// Reconcile implements reconcile.Reconciler.
func (r *Reconciler) Reconcile(ctx context.Context, req reconcile.Request) (ctrl.Result, error) {
	start := time.Now()
	obj := &corev1.ConfigMap{}
	if err := r.Mgmt.Get(ctx, req.NamespacedName, obj); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	name := obj.Labels[ClusterNameLabel]
	if _, ok := r.Plan.Roles[name]; !ok {
		return ctrl.Result{}, nil // not an object of this run
	}
	key := client.ObjectKey{Namespace: req.Namespace, Name: name}
	read := time.Since(start)
	c, err := r.Strategy.Get(ctx, key)
	got := time.Since(start)
	if err != nil {
		res, rerr := r.Strategy.Result(err)
		outcome := Requeued
		if rerr != nil || res.IsZero() {
			outcome = Failed
		}
		r.Rec.Record(name, req.Name, start, got, outcome)
		return res, rerr
	}
	err = r.write(ctx, c, req.Name)
	wrote := time.Since(start)
	if r.Strategy.Report != nil {
		r.Strategy.Report(key, err)
	}
	if err != nil {
		err = fmt.Errorf("cluster %s: %w", key, err)
		res, rerr := ctrl.Result{}, err
		if r.Strategy.WorkResult != nil {
			res, rerr = r.Strategy.WorkResult(err)
		}
		outcome := Failed
		if rerr == nil && !res.IsZero() {
			outcome = Requeued
		}
		r.Rec.Record(name, req.Name, start, time.Since(start), outcome)
		return res, rerr
	}
	r.Timings.Add("mgmt_read", read)
	r.Timings.Add("client_get", got-read)
	r.Timings.Add("write", wrote-got)
	if rest := r.Plan.Work - time.Since(start); rest > 0 {
		t := time.NewTimer(rest)
		select {
		case <-t.C:
		case <-ctx.Done():
		}
		t.Stop()
	}
	r.Timings.Add("sleep_overshoot", time.Since(start)-max(r.Plan.Work, wrote))
	r.Rec.Record(name, req.Name, start, got, Succeeded)
	if r.Plan.Saturate {
		// Forget and add again at once: demand exceeds the workers.
		return ctrl.Result{RequeueAfter: time.Nanosecond}, nil
	}
	return ctrl.Result{}, nil
}

// write reads the workload cluster's ConfigMap name (creating it when
// missing) and updates its counter.
func (r *Reconciler) write(ctx context.Context, c client.Client, name string) error {
	cm := &corev1.ConfigMap{}
	key := types.NamespacedName{Namespace: r.Plan.WorkloadNamespace, Name: name}
	err := r.Timings.traced(ctx, func(ctx context.Context) error { return c.Get(ctx, key, cm) })
	if apierrors.IsNotFound(err) {
		cm = &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: key.Namespace, Name: key.Name},
			Data: map[string]string{"n": "1"}}
		if err := r.Timings.traced(ctx, func(ctx context.Context) error { return c.Create(ctx, cm) }); err != nil {
			return fmt.Errorf("creating configmap %s: %w", key, err)
		}
		return nil
	}
	if err != nil {
		return fmt.Errorf("reading configmap %s: %w", key, err)
	}
	n, _ := strconv.Atoi(cm.Data["n"])
	if cm.Data == nil {
		cm.Data = map[string]string{}
	}
	cm.Data["n"] = strconv.Itoa(n + 1)
	if err := r.Timings.traced(ctx, func(ctx context.Context) error { return c.Update(ctx, cm) }); err != nil {
		return fmt.Errorf("updating configmap %s: %w", key, err)
	}
	return nil
}

// Requests returns the requests of every object of cluster: the map
// function of the strategies' cluster sources.
func (p Plan) Requests(cluster client.ObjectKey) []reconcile.Request {
	if _, ok := p.Roles[cluster.Name]; !ok {
		return nil
	}
	reqs := make([]reconcile.Request, p.Objects)
	for i := range reqs {
		reqs[i].NamespacedName = types.NamespacedName{Namespace: cluster.Namespace, Name: ObjectName(cluster.Name, i)}
	}
	return reqs
}
