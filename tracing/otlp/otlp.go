// Package otlp builds OpenTelemetry trace and metric providers that export
// over OTLP/HTTP, configured by the standard environment variables
// (OTEL_EXPORTER_OTLP_ENDPOINT, OTEL_EXPORTER_OTLP_TRACES_ENDPOINT,
// OTEL_EXPORTER_OTLP_HEADERS, OTEL_SERVICE_NAME, OTEL_RESOURCE_ATTRIBUTES,
// ...), for programs that use clusterpool: pass the providers in
// pool.Options, or install them as the otel globals.
//
// It is a module of its own, so that the library does not pull in the
// exporters; programs that bring their own providers can ignore it.
package otlp

import (
	"context"
	"errors"
	"fmt"
	"os"
	"time"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/exporters/otlp/otlpmetric/otlpmetrichttp"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	semconv "go.opentelemetry.io/otel/semconv/v1.40.0"
)

// Providers are the SDK providers Setup built.
type Providers struct {
	Tracer *sdktrace.TracerProvider
	Meter  *sdkmetric.MeterProvider
}

// Shutdown flushes and stops both providers, within ctx.
func (p *Providers) Shutdown(ctx context.Context) error {
	return errors.Join(p.Tracer.Shutdown(ctx), p.Meter.Shutdown(ctx))
}

// Enabled reports whether the environment names an OTLP endpoint.
func Enabled() bool {
	for _, v := range []string{"OTEL_EXPORTER_OTLP_ENDPOINT", "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT"} {
		if os.Getenv(v) != "" {
			return true
		}
	}
	return false
}

// Options tune Setup; the zero value is fine.
type Options struct {
	// ServiceName is used when OTEL_SERVICE_NAME is not set.
	ServiceName string
	// ServiceVersion is the service.version resource attribute.
	ServiceVersion string
	// BatchTimeout is the span batcher's export delay; zero means the SDK's
	// default (5s, or OTEL_BSP_SCHEDULE_DELAY).
	BatchTimeout time.Duration
	// MetricInterval is the periodic reader's interval; zero means the
	// SDK's default (60s, or OTEL_METRIC_EXPORT_INTERVAL).
	MetricInterval time.Duration
	// Global installs the providers with otel.SetTracerProvider and
	// otel.SetMeterProvider.
	Global bool
}

// Setup builds a batching OTLP/HTTP trace provider and a periodic OTLP/HTTP
// metric provider with a resource carrying the service name and version
// (merged with OTEL_RESOURCE_ATTRIBUTES).
func Setup(ctx context.Context, o Options) (*Providers, error) {
	res, err := resource.Merge(resource.Default(), resource.NewSchemaless(serviceAttrs(o)...))
	if err != nil {
		return nil, fmt.Errorf("otlp: resource: %w", err)
	}
	if env, err := resource.New(ctx, resource.WithFromEnv()); err == nil {
		if merged, err := resource.Merge(res, env); err == nil {
			res = merged
		}
	}
	texp, err := otlptracehttp.New(ctx)
	if err != nil {
		return nil, fmt.Errorf("otlp: trace exporter: %w", err)
	}
	mexp, err := otlpmetrichttp.New(ctx)
	if err != nil {
		return nil, fmt.Errorf("otlp: metric exporter: %w", err)
	}
	var bopts []sdktrace.BatchSpanProcessorOption
	if o.BatchTimeout > 0 {
		bopts = append(bopts, sdktrace.WithBatchTimeout(o.BatchTimeout))
	}
	var ropts []sdkmetric.PeriodicReaderOption
	if o.MetricInterval > 0 {
		ropts = append(ropts, sdkmetric.WithInterval(o.MetricInterval))
	}
	p := &Providers{
		Tracer: sdktrace.NewTracerProvider(sdktrace.WithBatcher(texp, bopts...), sdktrace.WithResource(res)),
		Meter:  sdkmetric.NewMeterProvider(sdkmetric.WithReader(sdkmetric.NewPeriodicReader(mexp, ropts...)), sdkmetric.WithResource(res)),
	}
	if o.Global {
		otel.SetTracerProvider(p.Tracer)
		otel.SetMeterProvider(p.Meter)
	}
	return p, nil
}

func serviceAttrs(o Options) []attribute.KeyValue {
	name := os.Getenv("OTEL_SERVICE_NAME")
	if name == "" {
		name = o.ServiceName
	}
	if name == "" {
		name = "clusterpool"
	}
	attrs := []attribute.KeyValue{semconv.ServiceName(name)}
	if o.ServiceVersion != "" {
		attrs = append(attrs, semconv.ServiceVersion(o.ServiceVersion))
	}
	return attrs
}
