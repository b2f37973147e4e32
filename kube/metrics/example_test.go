package metrics_test

import (
	"context"
	"fmt"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/clusterpool/clusterpool/kube/metrics"
	"github.com/clusterpool/clusterpool/pool"
)

func ExampleNewMeterProvider() {
	// In a controller, metrics.Options{} registers into controller-runtime's
	// registry, which the manager serves on /metrics. This example uses a
	// registry of its own to show what it holds.
	reg := prometheus.NewRegistry()
	mp, err := metrics.NewMeterProvider(metrics.Options{Registerer: reg})
	if err != nil {
		panic(err)
	}
	defer mp.Shutdown(context.Background())

	p, err := pool.New(func(ctx context.Context, cluster string) (string, error) {
		return "client of " + cluster, nil
	}, pool.Options[string, string]{
		MaxWait:       10 * time.Second, // generous: the output must not depend on the machine's load
		MeterProvider: mp,
	})
	if err != nil {
		panic(err)
	}
	if _, err := p.Get(context.Background(), "fleet/workload-1"); err != nil { // a miss: waits for the dial
		panic(err)
	}
	p.Close()

	mfs, err := reg.Gather()
	if err != nil {
		panic(err)
	}
	for _, mf := range mfs {
		fmt.Println(mf.GetType(), mf.GetName())
	}
	// Output:
	// GAUGE clusterpool_breaker_clusters
	// HISTOGRAM clusterpool_dial_duration_seconds
	// GAUGE clusterpool_dials_inflight
	// COUNTER clusterpool_get_outcomes_total
	// HISTOGRAM clusterpool_wait_duration_seconds
}
