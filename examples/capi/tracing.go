package main

import (
	"context"
	"time"

	"github.com/clusterpool/clusterpool/tracing/otlp"
)

// setupTracing installs OTLP/HTTP trace and metric providers as the otel
// globals when OTEL_EXPORTER_OTLP_ENDPOINT is set (see package otlp). The
// returned func flushes and stops them.
func setupTracing(ctx context.Context) (func(), error) {
	if !otlp.Enabled() {
		return func() {}, nil
	}
	p, err := otlp.Setup(ctx, otlp.Options{ServiceName: "clusterpool-demo", ServiceVersion: "demo",
		BatchTimeout: 500 * time.Millisecond, Global: true})
	if err != nil {
		return nil, err
	}
	return func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		p.Shutdown(ctx)
	}, nil
}
