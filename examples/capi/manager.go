package main

import (
	"context"
	"fmt"
	"io"
	"sort"
	"text/tabwriter"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/client-go/rest"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	"github.com/clusterpool/clusterpool/breaker"
	"github.com/clusterpool/clusterpool/kube"
	"github.com/clusterpool/clusterpool/pool"
)

// countingSource counts dials per cluster for the table.
type countingSource struct {
	kube.ConfigSource
	stats *Stats
}

// Config counts a dial of key and reads its config.
func (c countingSource) Config(ctx context.Context, key client.ObjectKey) (*rest.Config, string, error) {
	c.stats.dialed(key)
	return c.ConfigSource.Config(ctx, key)
}

// workers is the controller's MaxConcurrentReconciles.
const workers = 10

func runController(ctx context.Context, out io.Writer, fleet *Fleet, cfg Config) (*Result, error) {
	mgr, err := ctrl.NewManager(fleet.Mgmt, ctrl.Options{Scheme: scheme, Metrics: metricsserver.Options{BindAddress: "0"}})
	if err != nil {
		return nil, err
	}
	stats := NewStats()
	src := countingSource{ConfigSource: kube.SecretSource{Reader: mgr.GetAPIReader()}, stats: stats}
	dialer, err := kube.NewDialer(src, kube.DialerOptions{
		Scheme: scheme, ReadyzTimeout: 2 * time.Second, WatchTypes: []client.Object{&corev1.ConfigMap{}},
	})
	if err != nil {
		return nil, err
	}
	p, err := kube.NewPool(dialer, pool.Options[client.ObjectKey, *kube.Cluster]{
		DialTimeout: 5 * time.Second,
		Breaker:     breaker.Settings{OpenTimeout: 2 * time.Second, MaxOpenTimeout: 16 * time.Second},
	})
	if err != nil {
		return nil, err
	}
	defer p.Close()
	prober, err := kube.NewProber(p, kube.ProberOptions{Interval: 2 * time.Second, Timeout: time.Second})
	if err != nil {
		return nil, err
	}
	for _, r := range []interface{ Start(context.Context) error }{prober, &kube.SecretWatcher{Informers: mgr.GetCache(), Pool: p}} {
		if err := mgr.Add(r); err != nil {
			return nil, err
		}
	}
	rec := &Reconciler{Client: mgr.GetClient(), Pool: p, Stats: stats}
	if err := ctrl.NewControllerManagedBy(mgr).For(&clusterv1.Cluster{}).
		WithOptions(controller.Options{MaxConcurrentReconciles: workers}).
		WatchesRawSource(kube.Source(p, kube.ClusterRequest)).
		Complete(rec); err != nil {
		return nil, err
	}

	runCtx, cancel := context.WithTimeout(ctx, cfg.Duration)
	defer cancel()
	mgrDone := make(chan error, 1)
	go func() { mgrDone <- mgr.Start(runCtx) }()
	// A recovery is measured from the moment the network heals for a
	// cluster the pool had lost, to its next successful reconcile.
	go fleet.Flap(runCtx, cfg.Flap, func(k client.ObjectKey, at time.Time) {
		if _, connected := p.Peek(k); !connected {
			stats.healed(k, at)
		}
	})

	tick := time.NewTicker(cfg.Every)
	defer tick.Stop()
	for done := false; !done; {
		select {
		case <-tick.C:
		case <-runCtx.Done():
			done = true
		}
		table(out, mgr.GetClient(), fleet, p, stats, done)
	}
	if err := <-mgrDone; err != nil {
		return nil, err
	}
	res := &Result{Fleet: fleet.Members, Figures: map[string]clusterStats{}, States: map[string]string{}, Conditions: map[string]string{}}
	for _, m := range fleet.Members {
		res.Figures[m.Key.Name] = stats.snapshot(m.Key)
		res.States[m.Key.Name] = p.State(m.Key).Breaker.String()
		res.Conditions[m.Key.Name] = condition(mgr.GetAPIReader(), m.Key)
	}
	return res, nil
}

func table(out io.Writer, mgmt client.Reader, fleet *Fleet, p *pool.Pool[client.ObjectKey, *kube.Cluster], s *Stats, final bool) {
	w := tabwriter.NewWriter(out, 0, 0, 2, ' ', 0)
	title := fmt.Sprintf("t=%v", time.Since(s.start).Round(time.Second))
	if final {
		title = "summary"
	}
	fmt.Fprintf(w, "%s\trole\tbreaker\tconnected\tcondition\treconciles\tlast\tfirst after\twaits\trejections\tdials\tmax Get\trecoveries\n", title)
	members := append([]member(nil), fleet.Members...)
	sort.Slice(members, func(i, j int) bool { return members[i].Key.Name < members[j].Key.Name })
	for _, m := range members {
		st := p.State(m.Key)
		f := s.snapshot(m.Key)
		cond := condition(mgmt, m.Key)
		fmt.Fprintf(w, "%s\t%s\t%v\t%v\t%s\t%d\t%s\t%s\t%d\t%d\t%d\t%v\t%v\n", m.Key.Name, m.Role, st.Breaker, st.Connected, cond,
			f.reconciles, ago(f.last), since(s.start, f.first), f.waits, f.rejections, f.dials,
			f.maxGet.Round(time.Millisecond), rounded(f.recoveries))
	}
	w.Flush()
	fmt.Fprintln(out)
}

// condition reads the Cluster's RemoteConnectionProbe condition as
// "Status/Reason", or "-".
func condition(mgmt client.Reader, key client.ObjectKey) string {
	var cl clusterv1.Cluster
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	if err := mgmt.Get(ctx, key, &cl); err == nil {
		if c := meta.FindStatusCondition(cl.Status.Conditions, ProbeCondition); c != nil {
			return string(c.Status) + "/" + c.Reason
		}
	}
	return "-"
}

func ago(t time.Time) string {
	if t.IsZero() {
		return "never"
	}
	return time.Since(t).Round(100*time.Millisecond).String() + " ago"
}

func since(start, t time.Time) string {
	if t.IsZero() {
		return "-"
	}
	return t.Sub(start).Round(10 * time.Millisecond).String()
}

func rounded(ds []time.Duration) []time.Duration {
	out := make([]time.Duration, len(ds))
	for i, d := range ds {
		out[i] = d.Round(10 * time.Millisecond)
	}
	return out
}
