package metrics

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"

	"github.com/prometheus/client_golang/prometheus"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
)

// instance is one MeterProvider and the exporter's collector reading it.
type instance struct {
	provider  *sdkmetric.MeterProvider
	reader    sdkmetric.Reader
	collector prometheus.Collector
}

// live reports whether the provider has not been shut down.
func (i instance) live() bool {
	return !errors.Is(i.reader.Collect(context.Background(), &metricdata.ResourceMetrics{}), sdkmetric.ErrReaderShutdown)
}

// forwarder is the one collector registered per Registerer. It forwards to
// the collector of the Registerer's current instance, so that a new
// instance replaces a shut-down one without a second registration (the
// exporter's collectors are unchecked: Prometheus cannot unregister them,
// and two of them would emit the same series).
type forwarder struct {
	current atomic.Pointer[instance]
}

// Describe describes nothing, which makes the collector unchecked, as the
// exporter's own is: the metrics are not known in advance.
func (*forwarder) Describe(chan<- *prometheus.Desc) {}

// Collect collects the current instance's metrics.
func (f *forwarder) Collect(ch chan<- prometheus.Metric) {
	if i := f.current.Load(); i != nil {
		i.collector.Collect(ch)
	}
}

var (
	mu         sync.Mutex
	forwarders = map[prometheus.Registerer]*forwarder{}
)

// providerFor returns reg's live provider, building one (and registering
// reg's forwarder, the first time) when there is none.
func providerFor(reg prometheus.Registerer) (*sdkmetric.MeterProvider, error) {
	mu.Lock()
	defer mu.Unlock()
	f, known := forwarders[reg]
	if known {
		if i := f.current.Load(); i.live() {
			return i.provider, nil
		}
	}
	i, err := build()
	if err != nil {
		return nil, err
	}
	if !known {
		f = &forwarder{}
		if err := reg.Register(f); err != nil {
			return nil, errors.Join(fmt.Errorf("metrics: registering the collector: %w", err),
				i.provider.Shutdown(context.Background()))
		}
		forwarders[reg] = f
	}
	f.current.Store(&i)
	return i.provider, nil
}
