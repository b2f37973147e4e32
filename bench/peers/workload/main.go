package workload

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/url"
	"os"
	"runtime"
	"time"

	"github.com/go-logr/logr"
	"github.com/go-logr/logr/funcr"
	corev1 "k8s.io/api/core/v1"
	kruntime "k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/klog/v2"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"
	"sigs.k8s.io/controller-runtime/pkg/predicate"

	"github.com/clusterpool/clusterpool/bench/peers/workload/idle"
)

// Peer is one strategy's program.
type Peer struct {
	// Name is the strategy ("cct", "clustercache", "clusterpool") and
	// Version the version of the code under test.
	Name, Version string
	// AddToScheme registers the Cluster API types the peer reads.
	AddToScheme func(*kruntime.Scheme) error
	// Setup builds the strategy on mgr (adding its own controllers and
	// runnables) and returns it, with a function that adds its cluster
	// source to the workload controller (nil if it has none).
	Setup func(ctx context.Context, mgr manager.Manager, plan Plan) (Strategy, func(*builder.Builder) *builder.Builder, error)
}

// Main runs the peer with the flags of the command line, prints its
// Figures as JSON on stdout and exits; 1 on error (the message on stderr).
func Main(p Peer) {
	plan, err := ParsePlan(os.Args[1:])
	if err == nil {
		err = Run(ctrl.SetupSignalHandler(), p, plan, os.Stdout)
	}
	if err != nil {
		fmt.Fprintf(os.Stderr, "%s: %v\n", p.Name, err)
		os.Exit(1)
	}
}

// Run runs one plan: it starts a manager on the management cluster with the
// strategy and the workload controller, waits until the run ends, writes the
// figures to out, then stops the manager.
func Run(ctx context.Context, p Peer, plan Plan, out io.Writer) error {
	log := logr.Discard()
	if os.Getenv("PEER_LOG") != "" {
		log = funcr.New(func(prefix, args string) { fmt.Fprintln(os.Stderr, prefix, args) }, funcr.Options{})
	}
	ctrl.SetLogger(log)
	klog.SetLogger(log)

	cfg, err := clientcmd.BuildConfigFromFlags("", plan.Kubeconfig)
	if err != nil {
		return fmt.Errorf("reading management kubeconfig: %w", err)
	}
	scheme := kruntime.NewScheme()
	if err := clientgoscheme.AddToScheme(scheme); err != nil {
		return err
	}
	if err := p.AddToScheme(scheme); err != nil {
		return fmt.Errorf("registering Cluster API types: %w", err)
	}
	grace := 5 * time.Second
	mgr, err := ctrl.NewManager(cfg, ctrl.Options{
		Scheme: scheme, Logger: log, GracefulShutdownTimeout: &grace,
		Metrics:                metricsserver.Options{BindAddress: "0"},
		HealthProbeBindAddress: "0",
		Cache:                  cache.Options{DefaultNamespaces: map[string]cache.Config{plan.Namespace: {}}},
	})
	if err != nil {
		return fmt.Errorf("creating manager: %w", err)
	}
	requests, err := instrument(&plan, cfg.Host)
	if err != nil {
		return err
	}
	sent, err := countSentFrom(plan, cfg.Host)
	if err != nil {
		return err
	}
	runCtx, cancel := context.WithCancel(ctx)
	defer cancel()
	strategy, watch, err := p.Setup(runCtx, mgr, plan)
	if err != nil {
		return fmt.Errorf("setting up %s: %w", p.Name, err)
	}
	rec := NewRecorder(plan)
	sampled := runSampler(runCtx, plan, strategy, rec)
	labelled := predicate.NewPredicateFuncs(func(o client.Object) bool { return o.GetLabels()[ClusterNameLabel] != "" })
	b := ctrl.NewControllerManagedBy(mgr).Named("workload").
		For(&corev1.ConfigMap{}, builder.WithPredicates(labelled)).
		WithOptions(controller.Options{MaxConcurrentReconciles: plan.Workers})
	if watch != nil {
		b = watch(b)
	}
	if err := b.Complete(&Reconciler{Mgmt: mgr.GetClient(), Strategy: strategy, Plan: plan, Rec: rec, Timings: plan.Timings}); err != nil {
		return fmt.Errorf("creating workload controller: %w", err)
	}

	done := make(chan error, 1)
	rec.Begin()
	go func() { done <- mgr.Start(runCtx) }()
	if err := wait(ctx, rec, plan, done); err != nil {
		return err
	}
	f := rec.Figures()
	f.Availability = sampled.stop()
	f.RequestsSent = sent()
	f.Strategy, f.Version = p.Name, p.Version
	f.Timings = plan.Timings.Dists()
	measure(plan, requests, &f)
	afterIdle(runCtx, plan, strategy, &f)
	if err := json.NewEncoder(out).Encode(f); err != nil {
		return fmt.Errorf("writing figures: %w", err)
	}
	cancel()
	select {
	case <-done:
	case <-time.After(2 * grace):
		fmt.Fprintf(os.Stderr, "%s: manager did not stop within %s\n", p.Name, 2*grace)
	}
	return nil
}

// instrument sets up what the plan records beyond the workload's figures:
// with RecordTimings, plan.Timings and client-go's hooks; in a scale run
// (Idle) without them, a count of the requests to hosts other than the
// management cluster's mgmtHost, which it returns (nil otherwise).
func instrument(plan *Plan, mgmtHost string) (requests func() uint64, err error) {
	if plan.RecordTimings {
		plan.Timings = NewTimings()
		HookClientGo(plan.Timings)
		return nil, nil
	}
	if plan.Idle <= 0 {
		return nil, nil
	}
	u, err := url.Parse(mgmtHost)
	if err != nil {
		return nil, fmt.Errorf("management host: %w", err)
	}
	return idle.CountRequests(u.Host), nil
}

// measure sets f's process figures: after the idle window in a scale run,
// else now.
func measure(plan Plan, requests func() uint64, f *Figures) {
	if plan.Idle > 0 {
		measureIdle(plan.Idle, requests, f)
		return
	}
	f.Goroutines = runtime.NumGoroutine()
	f.RSSBytes, f.PeakRSSBytes = idle.RSS()
}

// wait returns when the run is over: Duration passed, or (unless
// saturated) every measured object reconciled once; or an error if the
// manager stopped first.
func wait(ctx context.Context, rec *Recorder, plan Plan, done <-chan error) error {
	var all <-chan struct{}
	if !plan.Saturate {
		all = rec.AllDone()
	}
	t := time.NewTimer(plan.Duration)
	defer t.Stop()
	select {
	case <-t.C:
	case <-all:
	case err := <-done:
		return fmt.Errorf("manager stopped early: %w", err)
	case <-ctx.Done():
		return ctx.Err()
	}
	return nil
}
