package main

import (
	"context"
	"fmt"
	"io"
	"sort"
	"strings"
	"time"

	"go.opentelemetry.io/otel/metric"
	corev1 "k8s.io/api/core/v1"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	"github.com/clusterpool/clusterpool/breaker"
	"github.com/clusterpool/clusterpool/kube"
	"github.com/clusterpool/clusterpool/kube/shard"
	"github.com/clusterpool/clusterpool/pool"
)

// Leases of the -replicas mode: short, so that the hand-over shows within
// the demo.
const (
	shardLease    = 4 * time.Second
	shardDeadline = 3 * time.Second
	shardInterval = 500 * time.Millisecond
)

// wireController adds the workload pool, its prober and Secret watcher, and
// the Cluster controller to mgr, and returns the pool (the caller closes
// it). With s, the controller shards: it drops events of clusters s does
// not own, enqueues a cluster when s gains it, takes clients through a
// shard.Getter, and s removes lost clusters from the pool.
func wireController(mgr manager.Manager, stats *Stats, mp metric.MeterProvider, s *shard.Sharder) (*pool.Pool[client.ObjectKey, *kube.Cluster], error) {
	src := countingSource{ConfigSource: kube.SecretSource{Reader: mgr.GetClient()}, stats: stats}
	dialer, err := kube.NewDialer(src, kube.DialerOptions{
		Scheme: scheme, ReadyzTimeout: 2 * time.Second, WatchTypes: []client.Object{&corev1.ConfigMap{}},
		Requests: kube.RequestOptions{MeterProvider: mp}, // bulkhead, first-byte deadline, passive health: defaults
	})
	if err != nil {
		return nil, err
	}
	p, err := kube.NewPool(dialer, pool.Options[client.ObjectKey, *kube.Cluster]{
		DialTimeout:   5 * time.Second,
		Breaker:       breaker.Settings{OpenTimeout: 2 * time.Second, MaxOpenTimeout: 16 * time.Second},
		MeterProvider: mp,
	})
	if err != nil {
		return nil, err
	}
	fail := func(err error) (*pool.Pool[client.ObjectKey, *kube.Cluster], error) {
		p.Close()
		return nil, err
	}
	prober, err := kube.NewProber(p, kube.ProberOptions{Interval: 2 * time.Second, Timeout: time.Second})
	if err != nil {
		return fail(err)
	}
	for _, r := range []interface{ Start(context.Context) error }{prober, &kube.SecretWatcher{Informers: mgr.GetCache(), Pool: p}} {
		if err := mgr.Add(r); err != nil {
			return fail(err)
		}
	}
	rec := &Reconciler{Client: mgr.GetClient(), Pool: p, Stats: stats}
	b := ctrl.NewControllerManagedBy(mgr).For(&clusterv1.Cluster{}).
		WithOptions(controller.Options{MaxConcurrentReconciles: workers}).
		WatchesRawSource(kube.Source(p, kube.ClusterRequest))
	if s != nil {
		rec.Clients = shard.NewGetter(s, p)
		b = b.Named("cluster-" + s.Identity()). // unique among the replicas in this process
							WithEventFilter(s.Predicate(shard.ObjectKeyOf)).WatchesRawSource(shard.Source(s, shard.ClusterRequest))
	}
	if err := b.Complete(rec); err != nil {
		return fail(err)
	}
	return p, nil
}

// shardReplica is one controller replica of the -replicas mode.
type shardReplica struct {
	name   string
	mgr    manager.Manager
	shard  *shard.Sharder
	pool   *pool.Pool[client.ObjectKey, *kube.Cluster]
	cancel context.CancelFunc
	done   chan error
}

func newShardReplica(fleet *Fleet, stats *Stats, name string) (*shardReplica, error) {
	mgr, err := ctrl.NewManager(fleet.Mgmt, ctrl.Options{Scheme: scheme, Metrics: metricsserver.Options{BindAddress: "0"}})
	if err != nil {
		return nil, err
	}
	leases, err := client.New(fleet.Mgmt, client.Options{HTTPClient: mgr.GetHTTPClient(), Scheme: scheme})
	if err != nil {
		return nil, err
	}
	r := &shardReplica{name: name, mgr: mgr, done: make(chan error, 1)}
	// The pool is created after the Sharder, which needs it: Pool is a
	// late-bound adapter.
	lp := &latePool{}
	if r.shard, err = shard.New(leases, shard.Options{Group: "capi-demo", Identity: name, Namespace: Namespace,
		LeaseDuration: shardLease, RenewDeadline: shardDeadline, RenewInterval: shardInterval,
		Clusters: shard.ListKeys(mgr.GetClient(), func() client.ObjectList { return &clusterv1.ClusterList{} }),
		Pool:     lp}); err != nil {
		return nil, err
	}
	if err := mgr.Add(r.shard); err != nil {
		return nil, err
	}
	if r.pool, err = wireController(mgr, stats, nil, r.shard); err != nil {
		return nil, err
	}
	lp.Pool = shard.PoolOf(r.pool)
	return r, nil
}

// latePool forwards to Pool, set before the manager starts.
type latePool struct{ shard.Pool }

func (r *shardReplica) start(ctx context.Context) {
	ctx, r.cancel = context.WithCancel(ctx)
	go func() { r.done <- r.mgr.Start(ctx) }()
}

// stop stops the manager (its Sharder deletes its Lease) and the pool.
func (r *shardReplica) stop() error {
	r.cancel()
	err := <-r.done
	r.pool.Close()
	return err
}

// runReplicas is runController with cfg.Replicas managers sharding the
// clusters through Leases. Halfway through, the last replica stops
// gracefully and its clusters move to the others.
func runReplicas(ctx context.Context, out io.Writer, fleet *Fleet, cfg Config) (*Result, error) {
	stats := NewStats()
	var reps []*shardReplica
	for i := range cfg.Replicas {
		r, err := newShardReplica(fleet, stats, fmt.Sprintf("replica-%d", i))
		if err != nil {
			return nil, err
		}
		reps = append(reps, r)
	}
	runCtx, cancel := context.WithTimeout(ctx, cfg.Duration)
	defer cancel()
	for _, r := range reps {
		r.start(ctx)
	}
	running := reps
	defer func() {
		for _, r := range running {
			r.stop() //nolint:errcheck // stopping on an early return
		}
	}()
	go fleet.Flap(runCtx, cfg.Flap, func(k client.ObjectKey, at time.Time) {
		if owner := ownerOf(reps, k); owner != nil { // a stopped replica owns nothing
			if _, connected := owner.pool.Peek(k); !connected {
				stats.healed(k, at)
			}
		}
	})
	half := time.After(cfg.Duration / 2)
	tick := time.NewTicker(cfg.Every)
	defer tick.Stop()
	for done := false; !done; {
		select {
		case <-tick.C:
		case <-half:
			last := running[len(running)-1]
			running = running[:len(running)-1]
			fmt.Fprintf(out, "stopping %s: its Lease is deleted, its clusters move to the others\n\n", last.name)
			if err := last.stop(); err != nil {
				return nil, err
			}
			continue
		case <-runCtx.Done():
			done = true
		}
		ownership(out, running, fleet)
		for _, r := range running {
			fmt.Fprintf(out, "%s's pool:\n", r.name)
			table(out, r.mgr.GetClient(), fleet, r.pool, stats, done)
		}
	}
	res := &Result{Fleet: fleet.Members, Figures: map[string]clusterStats{}, States: map[string]string{}, Conditions: map[string]string{}}
	for _, m := range fleet.Members {
		res.Figures[m.Key.Name] = stats.snapshot(m.Key)
		if owner := ownerOf(running, m.Key); owner != nil {
			res.States[m.Key.Name] = owner.pool.State(m.Key).Breaker.String()
		}
		res.Conditions[m.Key.Name] = condition(running[0].mgr.GetAPIReader(), m.Key)
	}
	return res, nil
}

func ownerOf(reps []*shardReplica, k client.ObjectKey) *shardReplica {
	for _, r := range reps {
		if r.shard.Owns(k) {
			return r
		}
	}
	return nil
}

// ownership prints which replica owns which cluster.
func ownership(out io.Writer, reps []*shardReplica, fleet *Fleet) {
	owned := map[string][]string{}
	for _, m := range fleet.Members {
		name := "(handing over)"
		if r := ownerOf(reps, m.Key); r != nil {
			name = r.name
		}
		owned[name] = append(owned[name], m.Key.Name)
	}
	var parts []string
	for name, clusters := range owned {
		sort.Strings(clusters)
		parts = append(parts, name+": "+strings.Join(clusters, " "))
	}
	sort.Strings(parts)
	fmt.Fprintf(out, "ownership  %s\n", strings.Join(parts, "  |  "))
}
