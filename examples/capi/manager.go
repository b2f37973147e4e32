package main

import (
	"context"
	"fmt"
	"io"
	"sort"
	"text/tabwriter"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/client-go/rest"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	"github.com/clusterpool/clusterpool/kube"
	poolmetrics "github.com/clusterpool/clusterpool/kube/metrics"
	"github.com/clusterpool/clusterpool/pool"
)

// countingSource counts dials per cluster for the table (not the reads of
// the Prober's endpoint checks while a breaker is open).
type countingSource struct {
	kube.ConfigSource
	stats *Stats
}

// Config counts a dial of key and reads its config.
func (c countingSource) Config(ctx context.Context, key client.ObjectKey) (*rest.Config, string, error) {
	if !kube.IsEndpointCheck(ctx) {
		c.stats.dialed(key)
	}
	return c.ConfigSource.Config(ctx, key)
}

// workers is the controller's MaxConcurrentReconciles.
const workers = 10

func runController(ctx context.Context, out io.Writer, fleet *Fleet, cfg Config) (*Result, error) {
	addr, err := metricsAddr(cfg.MetricsPort)
	if err != nil {
		return nil, err
	}
	mgr, err := ctrl.NewManager(fleet.Mgmt, ctrl.Options{Scheme: scheme, Metrics: metricsserver.Options{BindAddress: addr}})
	if err != nil {
		return nil, err
	}
	// The pool's metrics go to controller-runtime's registry, which the
	// manager serves on /metrics; its traces go to the otel global (OTLP
	// when configured).
	mp, err := poolmetrics.NewMeterProvider(poolmetrics.Options{})
	if err != nil {
		return nil, err
	}
	defer mp.Shutdown(context.Background())
	metricsURL := "http://" + addr + "/metrics"
	fmt.Fprintf(out, "metrics: curl -s %s | grep ^clusterpool_\n", metricsURL)
	stats := NewStats()
	p, err := wireController(mgr, stats, mp, nil)
	if err != nil {
		return nil, err
	}
	defer p.Close()

	runCtx, cancel := context.WithTimeout(ctx, cfg.Duration)
	defer cancel()
	// The manager outlives runCtx by the final scrape of its /metrics.
	mgrCtx, stopMgr := context.WithCancel(ctx)
	defer stopMgr()
	mgrDone := make(chan error, 1)
	go func() { mgrDone <- mgr.Start(mgrCtx) }()
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
	samples, err := scrapePool(context.Background(), metricsURL)
	if err != nil {
		fmt.Fprintln(out, err) // e.g. after an interrupt; Result.Metrics stays empty
	} else {
		fmt.Fprintf(out, "%s (clusterpool_ samples, buckets left out):\n%s\n", metricsURL, samples)
	}
	stopMgr()
	if err := <-mgrDone; err != nil {
		return nil, err
	}
	res := &Result{Fleet: fleet.Members, Figures: map[string]clusterStats{}, States: map[string]string{}, Conditions: map[string]string{},
		Metrics: samples}
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
	fmt.Fprintf(w, "%s\trole\tbreaker\tconnected\tcondition\treconciles\tlast\tfirst after\twaits\trejections\tdials\tmax Get\tmax request\trecoveries\n", title)
	members := append([]member(nil), fleet.Members...)
	sort.Slice(members, func(i, j int) bool { return members[i].Key.Name < members[j].Key.Name })
	for _, m := range members {
		st := p.State(m.Key)
		f := s.snapshot(m.Key)
		cond := condition(mgmt, m.Key)
		fmt.Fprintf(w, "%s\t%s\t%v\t%v\t%s\t%d\t%s\t%s\t%d\t%d\t%d\t%v\t%v\t%v\n", m.Key.Name, m.Role, st.Breaker, st.Connected, cond,
			f.reconciles, ago(f.last), since(s.start, f.first), f.waits, f.rejections, f.dials,
			f.maxGet.Round(time.Millisecond), f.maxRequest.Round(time.Millisecond), rounded(f.recoveries))
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
