// Command capi is the bench/peers program that runs a real Cluster API
// controller: v1.14.2's MachineHealthCheck reconciler
// (sigs.k8s.io/cluster-api/core/reconcilers/machinehealthcheck), wired as
// Cluster API v1.14.2's core/main.go wires it (manager cache and client
// options from core/setup, the Machine indexes, MachineHealthCheck
// concurrency 50, ClusterCache concurrency 100 and QPS 20 / burst 30 per
// workload cluster, QPS 100 / burst 200 to the management cluster, the
// priority queue), on one of two ClusterCaches (-chaos also runs v1.14.2's
// Machine reconciler on it; see machine.go):
//
//   - -cache stock: Cluster API's own clustercache.SetupWithManager;
//   - -cache adapter: clusterpool's drop-in,
//     github.com/clusterpool/clusterpool/clusterapi/clustercache, whose
//     SetupWithManager has the same signature.
//
// Nothing else differs between the two: both are built into this one
// binary, on the same dependency versions (those the adapter's module
// lifts Cluster API v1.14.2 to).
//
// It runs for -duration, then prints one JSON object (figures) on stdout:
// the reconcile errors logged ("Reconciler error", by controller and by
// kind), the reconciles by result (controller-runtime's
// controller_runtime_reconcile_total), RSS and goroutines. The driver
// (bench/peers/driver -mhc) measures the rest from outside: when each
// Machine's HealthCheckSucceeded condition is set, and the dials at the
// fault proxies. PEER_LOG=N also prints the controller logs on stderr, up
// to verbosity N.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"runtime"
	"strconv"
	"time"

	"github.com/go-logr/logr"
	"github.com/go-logr/logr/funcr"
	kruntime "k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/klog/v2"
	"k8s.io/utils/ptr"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	"sigs.k8s.io/cluster-api/controllers/clustercache"
	"sigs.k8s.io/cluster-api/controllers/remote"
	"sigs.k8s.io/cluster-api/core/reconcilers/machinehealthcheck"
	"sigs.k8s.io/cluster-api/core/setup"
	"sigs.k8s.io/cluster-api/feature"
	"sigs.k8s.io/cluster-api/util/index"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/config"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	"github.com/clusterpool/clusterpool/bench/peers/workload/idle"
	cpclustercache "github.com/clusterpool/clusterpool/clusterapi/clustercache"

	"github.com/clusterpool/clusterpool/bench/peers/protocol"
)

// version is the Cluster API version this module requires.
const version = "v1.14.2"

// Cluster API v1.14.2's core/main.go defaults (flag, line).
const (
	controllerName                = "cluster-api-controller-manager" // main.go controllerName
	machineHealthCheckConcurrency = 50                               // --machinehealthcheck-concurrency
	clusterCacheConcurrency       = 100                              // --clustercache-concurrency
	clusterCacheQPS               = 20                               // --clustercache-client-qps
	clusterCacheBurst             = 30                               // --clustercache-client-burst
	syncPeriod                    = 10 * time.Minute                 // --sync-period
	kubeAPIQPS                    = 100                              // --kube-api-qps
	kubeAPIBurst                  = 200                              // --kube-api-burst
)

// figures is what the peer prints at the end of a -mhc run
// (bench/peers/protocol).
type figures = protocol.MHCFigures

// plan is the command line.
type plan struct {
	Kubeconfig, Namespace, Cache string
	Duration                     time.Duration
	// Chaos: run until stdin closes, printing a chaosSample every Sample
	// (see chaos.go); a call through the checked ClusterCache that takes
	// longer than HungAfter is reported hung.
	Chaos             bool
	Sample, HungAfter time.Duration
	// PProf, if set, is the loopback address (host:port, port 0 for any)
	// where -chaos serves net/http/pprof; every sample carries the address.
	PProf string
}

// featureGatesUsage is -feature-gates' help.
const featureGatesUsage = "Cluster API feature gates, as core/main.go's --feature-gates (e.g. ReconcilerRateLimiting=false)"

func main() {
	p, err := parseFlags(os.Args[1:])
	if err == nil {
		err = run(ctrl.SetupSignalHandler(), p, os.Stdout)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "capi:", err)
		os.Exit(1)
	}
}

func parseFlags(args []string) (plan, error) {
	var p plan
	fs := flag.NewFlagSet("capi", flag.ContinueOnError)
	fs.StringVar(&p.Kubeconfig, "kubeconfig", "", "management cluster kubeconfig")
	fs.StringVar(&p.Namespace, "namespace", "fleet", "namespace of the Clusters, Machines and MachineHealthChecks")
	fs.StringVar(&p.Cache, "cache", "stock", "ClusterCache: stock (Cluster API v1.14.2's) or adapter (clusterpool's drop-in)")
	fs.DurationVar(&p.Duration, "duration", time.Minute, "how long the controller runs")
	fs.Func("feature-gates", featureGatesUsage, func(v string) error { return feature.MutableGates.Set(v) })
	fs.BoolVar(&p.Chaos, "chaos", false, "chaos mode: run until stdin closes, print one JSON sample per -sample on stdout; a line \"full\" on stdin asks for one with the live heap and metric series")
	fs.DurationVar(&p.Sample, "sample", time.Second, "chaos mode: time between samples")
	fs.DurationVar(&p.HungAfter, "hung-after", 15*time.Second, "chaos mode: a call through the ClusterCache or its clients that takes longer is reported hung")
	fs.StringVar(&p.PProf, "pprof", "", "chaos mode: serve net/http/pprof on this loopback address (e.g. 127.0.0.1:0); the samples carry the address")
	if err := fs.Parse(args); err != nil {
		return p, err
	}
	if err := loopbackOnly(p.PProf); err != nil {
		return p, err
	}
	if p.Kubeconfig == "" || p.Duration <= 0 || (p.Cache != "stock" && p.Cache != "adapter") {
		return p, errors.New("want -kubeconfig, a positive -duration and -cache stock or adapter")
	}
	if p.Chaos && (p.Sample <= 0 || p.HungAfter <= 0) {
		return p, errors.New("-chaos wants a positive -sample and -hung-after")
	}
	return p, nil
}

// setupFunc is the signature both SetupWithManagers share.
type setupFunc func(context.Context, manager.Manager, clustercache.Options, controller.Options) (clustercache.ClusterCache, error)

// setupFor returns the -cache's SetupWithManager.
func setupFor(cache string) setupFunc {
	if cache == "adapter" {
		return cpclustercache.SetupWithManager
	}
	return clustercache.SetupWithManager
}

func run(ctx context.Context, p plan, out io.Writer) error {
	counter := newErrorCounter()
	var sink logr.Logger = logr.Discard()
	if v := os.Getenv("PEER_LOG"); v != "" {
		verbosity, _ := strconv.Atoi(v)
		sink = funcr.New(func(prefix, args string) { fmt.Fprintln(os.Stderr, time.Now().Format("15:04:05.000"), prefix, args) },
			funcr.Options{Verbosity: verbosity})
	}
	log := counter.logger(sink)
	ctrl.SetLogger(log)
	klog.SetLogger(log)

	if p.Chaos {
		counter.trackSuccesses()
		return runChaos(ctx, p, counter, os.Stdin, out)
	}
	mgr, err := newManager(p)
	if err != nil {
		return err
	}
	runCtx, cancel := context.WithCancel(ctx)
	defer cancel()
	if _, err := setupControllers(runCtx, mgr, setupFor(p.Cache), nil, false); err != nil {
		return err
	}
	start := time.Now()
	done := make(chan error, 1)
	go func() { done <- mgr.Start(runCtx) }()
	t := time.NewTimer(p.Duration)
	defer t.Stop()
	select {
	case <-t.C:
	case err := <-done:
		return fmt.Errorf("manager stopped early: %w", err)
	case <-ctx.Done():
		return ctx.Err()
	}
	f := figures{Cache: p.Cache, Version: version, StartUnixMs: start.UnixMilli(), Seconds: time.Since(start).Seconds(),
		Goroutines: runtime.NumGoroutine()}
	n := counter.counts()
	f.ReconcileErrors, f.ErrorKinds, f.ErrorsByMHC, f.OtherErrors = n.MHC, n.Kinds, n.ByObject, n.Other
	if f.Reconciles, err = reconcileTotals(machineHealthCheckController); err != nil {
		return err
	}
	f.RSSBytes, f.PeakRSSBytes = idle.RSS()
	if err := json.NewEncoder(out).Encode(f); err != nil {
		return fmt.Errorf("writing figures: %w", err)
	}
	cancel()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		fmt.Fprintln(os.Stderr, "capi: manager did not stop within 10s")
	}
	return nil
}

// newManager is core/main.go's manager (lines 331-333 and 369-397: its
// management client's QPS, burst and user agent) without leader election,
// webhooks, metrics and health endpoints, watching p.Namespace.
func newManager(p plan) (manager.Manager, error) {
	cfg, err := clientcmd.BuildConfigFromFlags("", p.Kubeconfig)
	if err != nil {
		return nil, fmt.Errorf("reading management kubeconfig: %w", err)
	}
	cfg.QPS, cfg.Burst = kubeAPIQPS, kubeAPIBurst
	cfg.UserAgent = remote.DefaultClusterAPIUserAgent(controllerName)
	scheme := kruntime.NewScheme()
	if err := clientgoscheme.AddToScheme(scheme); err != nil {
		return nil, err
	}
	if err := clusterv1.AddToScheme(scheme); err != nil {
		return nil, err
	}
	grace := 5 * time.Second
	mgr, err := ctrl.NewManager(cfg, ctrl.Options{
		Controller: config.Controller{
			UsePriorityQueue: ptr.To(feature.Gates.Enabled(feature.PriorityQueue)),
			CacheSyncTimeout: 5 * time.Minute,
		},
		Scheme:                  scheme,
		GracefulShutdownTimeout: &grace,
		Metrics:                 metricsserver.Options{BindAddress: "0"},
		HealthProbeBindAddress:  "0",
		Cache:                   setup.ManagerCacheOptions(scheme, controllerName, p.Namespace, syncPeriod),
		Client:                  setup.ManagerClientOptions(),
	})
	if err != nil {
		return nil, fmt.Errorf("creating manager: %w", err)
	}
	return mgr, nil
}

// setupControllers adds the Machine indexes the MachineHealthCheck
// reconciler lists by (index.AddDefaultIndexes' ByMachineNode and
// ByMachineProviderID; its MachinePool and ClusterClass indexes need CRDs
// this fleet does not have), the ClusterCache as core/main.go sets it up
// (lines 440-455) and the reconciler (lines 730-736).
//
// wrap, if not nil, wraps the ClusterCache the reconcilers get (-chaos
// checks what they read); setupControllers returns the unwrapped one. With
// machines, the Machine reconciler runs too, on the same ClusterCache.
func setupControllers(ctx context.Context, mgr manager.Manager, setupCache setupFunc, wrap func(clustercache.ClusterCache) clustercache.ClusterCache, machines bool) (clustercache.ClusterCache, error) {
	if err := index.ByMachineNode(ctx, mgr); err != nil {
		return nil, fmt.Errorf("machine node index: %w", err)
	}
	if err := index.ByMachineProviderID(ctx, mgr); err != nil {
		return nil, fmt.Errorf("machine provider ID index: %w", err)
	}
	secrets, err := setup.CreateSecretCachingClient(mgr)
	if err != nil {
		return nil, err
	}
	cc, err := setupCache(ctx, mgr, clustercache.Options{
		SecretClient: secrets,
		Cache:        setup.ClusterCacheCacheOptions(),
		Client:       setup.ClusterCacheClientOptions(controllerName, clusterCacheQPS, clusterCacheBurst),
	}, controller.Options{MaxConcurrentReconciles: clusterCacheConcurrency})
	if err != nil {
		return nil, fmt.Errorf("setting up the ClusterCache: %w", err)
	}
	forReconciler := cc
	if wrap != nil {
		forReconciler = wrap(cc)
	}
	if machines {
		if err := setupMachineReconciler(ctx, mgr, forReconciler); err != nil {
			return nil, err
		}
	}
	return cc, (&machinehealthcheck.Reconciler{
		Client:       mgr.GetClient(),
		ClusterCache: forReconciler,
	}).SetupWithManager(ctx, mgr, controller.Options{MaxConcurrentReconciles: machineHealthCheckConcurrency})
}
