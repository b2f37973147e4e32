package bench

import (
	"context"
	"testing"
	"time"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"
	"go.opentelemetry.io/otel/trace/noop"

	"github.com/clusterpool/clusterpool/tracing"
)

// discard is a span exporter that drops batches: it measures the SDK and
// the batch processor, not a network.
type discard struct{}

func (discard) ExportSpans(context.Context, []sdktrace.ReadOnlySpan) error { return nil }
func (discard) Shutdown(context.Context) error                             { return nil }

// BenchmarkWaitSpan is the telemetry of one wait (a Get that is not a hit):
// the clusterpool.Wait span with its attributes and link, and the wait
// metrics, with otel's no-op provider and with the SDK and a batch exporter
// (everything sampled).
func BenchmarkWaitSpan(b *testing.B) {
	sdk := sdktrace.NewTracerProvider(sdktrace.WithBatcher(discard{}))
	defer sdk.Shutdown(context.Background())
	for _, tc := range []struct {
		name string
		tp   trace.TracerProvider
	}{{"noop", noop.NewTracerProvider()}, {"sdk-batch", sdk}} {
		b.Run("provider="+tc.name, func(b *testing.B) {
			r, err := tracing.New(tc.tp, nil)
			if err != nil {
				b.Fatal(err)
			}
			ctx, parent := tc.tp.Tracer("bench").Start(context.Background(), "reconcile")
			defer parent.End()
			_, dial := tc.tp.Tracer("bench").Start(context.Background(), "dial")
			defer dial.End()
			b.ReportAllocs()
			for b.Loop() {
				span := r.StartWait(ctx, "default/workload-1")
				r.EndWait(span, tracing.Acquired, time.Millisecond, "closed", dial.SpanContext())
			}
		})
	}
}
