package pool

import (
	"context"
	"testing"
	"testing/synctest"

	"go.opentelemetry.io/otel/attribute"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"

	"github.com/clusterpool/clusterpool/tracing"
)

type spanRecorder struct{ *tracetest.SpanRecorder }

func newSpanRecorder() spanRecorder { return spanRecorder{tracetest.NewSpanRecorder()} }

func (r spanRecorder) provider() trace.TracerProvider {
	return sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(r.SpanRecorder))
}

func attr(s sdktrace.ReadOnlySpan, k attribute.Key) attribute.Value {
	for _, kv := range s.Attributes() {
		if kv.Key == k {
			return kv.Value
		}
	}
	return attribute.Value{}
}

// Every Get that is not a hit has a wait span with its outcome, linked to
// the dial span, which is a root; transitions are events on the dial.
func TestSpansAndMetrics(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newFake()
		spans := newSpanRecorder()
		reader := sdkmetric.NewManualReader()
		p := newPool(t, f, Options[string, *client]{
			TracerProvider: spans.provider(),
			MeterProvider:  sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader)),
			FormatKey:      func(k string) string { return "ns/" + k },
		})
		parentCtx, parent := spans.provider().Tracer("test").Start(context.Background(), "reconcile")
		res := getAsync(parentCtx, p, "a")
		synctest.Wait()
		f.next(t).succeed()
		<-res
		p.Get(context.Background(), "a") // hit: no span
		for range 3 {
			failDial(t, p, f, "b", errRefused)
		}
		p.Get(context.Background(), "b") // rejected, untraced caller: no span
		p.Get(parentCtx, "b")            // rejected in a recording trace: a span
		parent.End()
		synctest.Wait() // dial spans end after their waiters wake

		var waits, dials []sdktrace.ReadOnlySpan
		for _, s := range spans.Ended() {
			switch s.Name() {
			case tracing.WaitSpan:
				waits = append(waits, s)
			case tracing.DialSpan:
				dials = append(dials, s)
			}
		}
		if len(waits) != 5 || len(dials) != 4 {
			t.Fatalf("%d wait and %d dial spans, want 5 and 4", len(waits), len(dials))
		}
		w := waits[0]
		if w.Parent().SpanID() != parent.SpanContext().SpanID() {
			t.Error("wait span is not a child of the caller's span")
		}
		if got := attr(w, tracing.OutcomeKey).AsString(); got != "acquired" {
			t.Errorf("outcome %q", got)
		}
		if got := attr(w, tracing.ClusterKey).AsString(); got != "ns/a" {
			t.Errorf("cluster %q", got)
		}
		if len(w.Links()) != 1 || w.Links()[0].SpanContext.SpanID() != dials[0].SpanContext().SpanID() {
			t.Error("wait span does not link to its dial")
		}
		if dials[0].Parent().IsValid() || dials[0].SpanContext().TraceID() == w.SpanContext().TraceID() {
			t.Error("dial span is not the root of its own trace")
		}
		for i, want := range []string{"failed", "failed", "failed", "rejected"} {
			if got := attr(waits[i+1], tracing.OutcomeKey).AsString(); got != want {
				t.Errorf("wait %d outcome %q want %q", i+1, got, want)
			}
		}
		if got := attr(waits[4], tracing.BreakerStateKey).AsString(); got != "open" {
			t.Errorf("rejected wait breaker state %q", got)
		}
		if waits[4].Parent().SpanID() != parent.SpanContext().SpanID() {
			t.Error("rejected wait span is not a child of the caller's span")
		}
		trip := dials[3]
		if ev := trip.Events(); len(ev) != 1 || ev[0].Name != tracing.TransitionEvent {
			t.Fatalf("tripping dial events %+v", trip.Events())
		}
		if got := attr(trip, tracing.DialResultKey).AsString(); got != "error" {
			t.Errorf("dial result %q", got)
		}

		var rm metricdata.ResourceMetrics
		if err := reader.Collect(context.Background(), &rm); err != nil {
			t.Fatal(err)
		}
		counts := map[string]int64{}
		for _, sm := range rm.ScopeMetrics {
			for _, m := range sm.Metrics {
				if m.Name != "clusterpool.get.outcomes" {
					continue
				}
				for _, dp := range m.Data.(metricdata.Sum[int64]).DataPoints {
					o, _ := dp.Attributes.Value(tracing.OutcomeKey)
					counts[o.AsString()] += dp.Value
				}
			}
		}
		if counts["acquired"] != 1 || counts["failed"] != 3 || counts["rejected"] != 2 {
			t.Errorf("outcome counts %v", counts)
		}
	})
}
