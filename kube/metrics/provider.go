package metrics

import (
	"errors"
	"fmt"
	"reflect"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/otlptranslator"
	otelprom "go.opentelemetry.io/otel/exporters/prometheus"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	ctrlmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"
)

// Options configure [NewMeterProvider]. The zero value serves the metrics on
// a controller-runtime manager's /metrics endpoint.
type Options struct {
	// Registerer is where the metrics are registered for Prometheus to
	// collect. nil means controller-runtime's ctrlmetrics.Registry, the
	// registry the manager's metrics server serves. It must be comparable
	// (a pointer, as *prometheus.Registry is): the provider is kept per
	// Registerer.
	Registerer prometheus.Registerer
}

// NewMeterProvider returns the OpenTelemetry MeterProvider whose metrics
// Prometheus collects through opts.Registerer: pass it as
// pool.Options.MeterProvider. The series it yields are listed in the
// package documentation.
//
// There is one provider per Registerer: the first call builds it and
// registers its collector; later calls with the same Registerer return the
// same provider, until it is shut down, after which the next call builds a
// new one and the collector registered the first time reads from it. No
// call registers a second collector, so calling it again neither fails nor
// breaks a scrape with duplicate series.
//
// Shutting the provider down stops its metrics from being served (the
// collector then yields nothing); do it when the manager stops, not while
// a pool that shares it still runs. The provider starts no goroutine.
func NewMeterProvider(opts Options) (*sdkmetric.MeterProvider, error) {
	reg := opts.Registerer
	if reg == nil {
		reg = ctrlmetrics.Registry
	}
	if !reflect.ValueOf(reg).Comparable() {
		return nil, fmt.Errorf("metrics: Registerer of type %T is not comparable; pass a pointer", reg)
	}
	return providerFor(reg)
}

// build makes a MeterProvider read by a Prometheus exporter, and returns
// the exporter's collector instead of registering it.
func build() (instance, error) {
	var c capture
	exp, err := otelprom.New(
		otelprom.WithRegisterer(&c),
		otelprom.WithoutScopeInfo(),
		otelprom.WithoutTargetInfo(),
		otelprom.WithTranslationStrategy(otlptranslator.UnderscoreEscapingWithSuffixes),
	)
	if err != nil {
		return instance{}, fmt.Errorf("metrics: prometheus exporter: %w", err)
	}
	if c.collector == nil {
		return instance{}, errors.New("metrics: the prometheus exporter registered no collector")
	}
	return instance{provider: sdkmetric.NewMeterProvider(sdkmetric.WithReader(exp)), reader: exp, collector: c.collector}, nil
}

// capture is the Registerer handed to the exporter: it keeps the exporter's
// collector, which the caller then serves through its own registered one.
type capture struct{ collector prometheus.Collector }

// Register keeps c.
func (r *capture) Register(c prometheus.Collector) error {
	r.collector = c
	return nil
}

// MustRegister keeps the last of cs.
func (r *capture) MustRegister(cs ...prometheus.Collector) {
	for _, c := range cs {
		r.collector = c
	}
}

// Unregister does nothing.
func (r *capture) Unregister(prometheus.Collector) bool { return false }
