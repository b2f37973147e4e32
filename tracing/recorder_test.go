package tracing

import (
	"context"
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/clusterpool/clusterpool/breaker"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"
	"go.opentelemetry.io/otel/trace/noop"
)

func TestNames(t *testing.T) {
	for o, want := range outcomeNames {
		if got := Outcome(o).String(); got != want {
			t.Errorf("Outcome(%d)=%q want %q", o, got, want)
		}
	}
	if Outcome(200).String() != "unknown" || DialResult(200).String() != "unknown" {
		t.Error("out-of-range names")
	}
	if DialPanic.String() != "panic" {
		t.Error("DialPanic")
	}
}

func TestDialSpanAndMetrics(t *testing.T) {
	spans := tracetest.NewSpanRecorder()
	reader := sdkmetric.NewManualReader()
	r, err := New(sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(spans)),
		sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader)))
	if err != nil {
		t.Fatal(err)
	}
	r.ClusterAdded("closed")
	_, span := r.StartDial(context.Background(), "ns/a", true)
	r.Transition(span, "ns/a", "closed", "open", 5*time.Second)
	r.EndDial(span, DialError, 2*time.Second, errors.New("refused"))

	ended := spans.Ended()
	if len(ended) != 1 || ended[0].Name() != DialSpan {
		t.Fatalf("spans %v", ended)
	}
	s := ended[0]
	if s.Status().Description != "refused" || len(s.Events()) != 1 || s.Events()[0].Name != TransitionEvent {
		t.Errorf("status %+v events %+v", s.Status(), s.Events())
	}
	var rm metricdata.ResourceMetrics
	if err := reader.Collect(context.Background(), &rm); err != nil {
		t.Fatal(err)
	}
	got := map[string]int64{}
	for _, m := range rm.ScopeMetrics[0].Metrics {
		switch d := m.Data.(type) {
		case metricdata.Sum[int64]:
			for _, dp := range d.DataPoints {
				st, _ := dp.Attributes.Value(BreakerStateKey)
				got[m.Name+"/"+st.AsString()] += dp.Value
			}
		case metricdata.Histogram[float64]:
			got[m.Name] = int64(d.DataPoints[0].Count)
		}
	}
	for k, want := range map[string]int64{
		"clusterpool.dials.inflight/":         0,
		"clusterpool.breaker.clusters/closed": 0,
		"clusterpool.breaker.clusters/open":   1,
		"clusterpool.breaker.transitions/":    1,
		"clusterpool.dial.duration":           1,
	} {
		if got[k] != want {
			t.Errorf("%s = %d want %d (all: %v)", k, got[k], want, got)
		}
	}
}

// With no-op providers a wait costs what otel's no-op Start costs, and
// attributes and metric options add no allocation.
func TestNoopWaitCostsTheNoopCost(t *testing.T) {
	tp := noop.NewTracerProvider()
	r, err := New(tp, nil)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	floor := testing.AllocsPerRun(100, func() {
		_, s := tp.Tracer("x").Start(ctx, WaitSpan)
		s.End()
	})
	if n := testing.AllocsPerRun(100, func() {
		r.EndWait(r.StartWait(ctx, "a"), Timeout, time.Millisecond, "closed", noopSC)
		r.Reject(ctx, "a", "open")
	}); n > floor {
		t.Errorf("allocs per wait %v, otel no-op floor %v", n, floor)
	}
}

var noopSC trace.SpanContext

// Counting clusters and transitions between the breaker's states builds no
// attribute set: with no-op providers it allocates nothing.
func TestTransitionAllocatesNothing(t *testing.T) {
	r, err := New(noop.NewTracerProvider(), nil)
	if err != nil {
		t.Fatal(err)
	}
	if n := testing.AllocsPerRun(100, func() {
		r.ClusterAdded("closed")
		r.Transition(nil, "a", "closed", "open", time.Second)
		r.Transition(nil, "a", "open", "half-open", 0)
		r.ClusterRemoved("half-open")
	}); n != 0 {
		t.Errorf("allocs per transition %v, want 0", n)
	}
}

// BreakerStates are the names the breaker reports.
func TestBreakerStatesAreTheBreakersNames(t *testing.T) {
	var want []string
	for _, s := range []breaker.State{breaker.StateClosed, breaker.StateHalfOpen, breaker.StateOpen} {
		want = append(want, s.String())
	}
	if !slices.Equal(BreakerStates, want) {
		t.Errorf("BreakerStates = %q, breaker's names %q", BreakerStates, want)
	}
}
