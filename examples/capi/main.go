// Command capi is the clusterpool demo on real kube-apiservers: a
// controller-runtime manager reconciles Cluster API Cluster objects in a
// management apiserver, takes a workload client for each from a clusterpool
// Pool, and reports the connection on the Cluster's RemoteConnectionProbe
// condition. Of the five workload clusters three are healthy, one is dead
// (a fault proxy that holds every connection) and one flaps between pass
// and hold. A live table shows what each cluster costs the workers.
//
//	make demo                        # from the repository root
//	go run . -duration 60s -flap 20s # from examples/capi
//
// With OTEL_EXPORTER_OTLP_ENDPOINT set, traces go to that OTLP/HTTP endpoint.
// The pool's metrics are on the manager's /metrics endpoint (127.0.0.1, a
// free port or -metrics-port), printed at the start and summed up at the end.
package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/go-logr/logr"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"
)

var scheme = runtime.NewScheme()

func init() {
	if err := clientgoscheme.AddToScheme(scheme); err != nil {
		panic(err)
	}
	if err := clusterv1.AddToScheme(scheme); err != nil {
		panic(err)
	}
}

func main() {
	duration := flag.Duration("duration", 60*time.Second, "how long the controller runs")
	flap := flag.Duration("flap", 20*time.Second, "period of the flapping cluster's switches")
	metricsPort := flag.Int("metrics-port", 0, "port of the manager's /metrics on 127.0.0.1 (0: a free one)")
	replicas := flag.Int("replicas", 1, "controller replicas sharding the clusters through Leases (kube/shard)")
	flag.Parse()
	ctrllog.SetLogger(logr.Discard())
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if _, err := Run(ctx, os.Stdout, Config{Duration: *duration, Flap: *flap, Every: 2 * time.Second, MetricsPort: *metricsPort, Replicas: *replicas}); err != nil {
		fmt.Fprintln(os.Stderr, "demo:", err)
		os.Exit(1)
	}
}

// Config is one demo run.
type Config struct {
	Duration time.Duration // how long the controller runs
	Flap     time.Duration // period of the flapping cluster
	Every    time.Duration // table refresh
	// MetricsPort is the port of the manager's metrics server on
	// 127.0.0.1; 0 means a free one.
	MetricsPort int
	// Replicas is the number of controller replicas; above 1 they shard
	// the clusters with kube/shard (see replicas.go). 0 means 1.
	Replicas int
}

// Result is what a run measured.
type Result struct {
	Wall    time.Duration
	Fleet   []member
	Figures map[string]clusterStats
	States  map[string]string // breaker state at the end
	// Conditions is each Cluster's RemoteConnectionProbe condition at the
	// end, as "Status/Reason".
	Conditions map[string]string
	// Metrics are the clusterpool_ samples (no buckets) the manager's
	// /metrics endpoint served at the end.
	Metrics string
}

// Run starts the fleet and the controller, shows the table, and stops
// everything it started.
func Run(ctx context.Context, out io.Writer, cfg Config) (*Result, error) {
	began := time.Now()
	shutdown, err := setupTracing(ctx)
	if err != nil {
		return nil, err
	}
	defer shutdown()
	fmt.Fprintln(out, "starting 1 management and 3 workload kube-apiservers...")
	fleet, err := StartFleet(ctx)
	if err != nil {
		return nil, err
	}
	defer fleet.Stop()
	fmt.Fprintf(out, "fleet up in %v; running the controller for %v\n", time.Since(began).Round(time.Millisecond), cfg.Duration)
	run := runController
	if cfg.Replicas > 1 {
		run = runReplicas
	}
	res, err := run(ctx, out, fleet, cfg)
	if res != nil {
		res.Wall = time.Since(began)
		fmt.Fprintf(out, "demo wall time %v\n", res.Wall.Round(time.Millisecond))
	}
	return res, err
}
