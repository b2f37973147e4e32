package tracing

import (
	"context"
	"fmt"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/trace"
)

// ScopeName is the instrumentation scope of the pool's tracer and meter.
const ScopeName = "github.com/clusterpool/clusterpool"

// Span names.
const (
	WaitSpan = "clusterpool.Wait"
	DialSpan = "clusterpool.Dial"
	// TransitionEvent is the span event for a breaker state change.
	TransitionEvent = "clusterpool.breaker.transition"
)

// Attribute keys.
const (
	ClusterKey      = attribute.Key("clusterpool.cluster")
	OutcomeKey      = attribute.Key("clusterpool.outcome")
	WaitSecondsKey  = attribute.Key("clusterpool.wait.seconds")
	BreakerStateKey = attribute.Key("clusterpool.breaker.state")
	DialResultKey   = attribute.Key("clusterpool.dial.result")
	ProbeKey        = attribute.Key("clusterpool.dial.probe")
	FromStateKey    = attribute.Key("clusterpool.breaker.from")
	ToStateKey      = attribute.Key("clusterpool.breaker.to")
	OpenForKey      = attribute.Key("clusterpool.breaker.open_for.seconds")
)

// Recorder records a pool's spans and metrics. Its methods are safe for
// concurrent use. The zero value is not usable; create one with [New].
type Recorder struct {
	tracer      trace.Tracer
	waitHist    metric.Float64Histogram
	outcomes    metric.Int64Counter
	dialHist    metric.Float64Histogram
	inflight    metric.Int64UpDownCounter
	clusters    metric.Int64UpDownCounter
	transitions metric.Int64Counter
	panics      metric.Int64Counter

	// Attribute options built once, so that recording allocates nothing
	// for attributes.
	outcomeRec [numOutcomes][]metric.RecordOption
	outcomeAdd [numOutcomes][]metric.AddOption
	dialRec    [numDialResults][]metric.RecordOption
	states     stateAttrs
}

// New returns a Recorder using tp and mp; nil means the otel global
// provider of that kind, looked up on every use as otel does.
func New(tp trace.TracerProvider, mp metric.MeterProvider) (*Recorder, error) {
	tp, mp = providers(tp, mp)
	r := &Recorder{tracer: tp.Tracer(ScopeName), states: newStateAttrs()}
	m := mp.Meter(ScopeName)
	var err error
	if r.waitHist, err = m.Float64Histogram("clusterpool.wait.duration", metric.WithUnit("s"),
		metric.WithDescription("Time a Get that was not a hit spent waiting."),
		metric.WithExplicitBucketBoundaries(.0005, .001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10)); err != nil {
		return nil, fmt.Errorf("tracing: clusterpool.wait.duration: %w", err)
	}
	if r.outcomes, err = m.Int64Counter("clusterpool.get.outcomes",
		metric.WithDescription("Gets that were not hits, by outcome.")); err != nil {
		return nil, fmt.Errorf("tracing: clusterpool.get.outcomes: %w", err)
	}
	if r.dialHist, err = m.Float64Histogram("clusterpool.dial.duration", metric.WithUnit("s"),
		metric.WithDescription("Duration of dials, by result."),
		metric.WithExplicitBucketBoundaries(.005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30)); err != nil {
		return nil, fmt.Errorf("tracing: clusterpool.dial.duration: %w", err)
	}
	if r.inflight, err = m.Int64UpDownCounter("clusterpool.dials.inflight",
		metric.WithDescription("Dials in flight, queued for a permit or running.")); err != nil {
		return nil, fmt.Errorf("tracing: clusterpool.dials.inflight: %w", err)
	}
	if r.clusters, err = m.Int64UpDownCounter("clusterpool.breaker.clusters",
		metric.WithDescription("Clusters known to the pool, by breaker state.")); err != nil {
		return nil, fmt.Errorf("tracing: clusterpool.breaker.clusters: %w", err)
	}
	if r.transitions, err = m.Int64Counter("clusterpool.breaker.transitions",
		metric.WithDescription("Breaker state changes, by from and to state.")); err != nil {
		return nil, fmt.Errorf("tracing: clusterpool.breaker.transitions: %w", err)
	}
	if r.panics, err = m.Int64Counter("clusterpool.callback.panics",
		metric.WithDescription("Panics of user callbacks (dialer, OnClose, IsFailure, FormatKey, ForKey) the pool recovered, by callback.")); err != nil {
		return nil, fmt.Errorf("tracing: clusterpool.callback.panics: %w", err)
	}
	for o := range numOutcomes {
		set := attribute.NewSet(OutcomeKey.String(o.String()))
		r.outcomeRec[o] = []metric.RecordOption{metric.WithAttributeSet(set)}
		r.outcomeAdd[o] = []metric.AddOption{metric.WithAttributeSet(set)}
	}
	for d := range numDialResults {
		r.dialRec[d] = []metric.RecordOption{metric.WithAttributeSet(attribute.NewSet(DialResultKey.String(d.String())))}
	}
	return r, nil
}

// StartWait starts the clusterpool.Wait span of a Get that missed, as a
// child of ctx's span.
func (r *Recorder) StartWait(ctx context.Context, cluster string) trace.Span {
	_, span := r.tracer.Start(ctx, WaitSpan)
	if span.IsRecording() {
		span.SetAttributes(ClusterKey.String(cluster))
	}
	return span
}

// EndWait ends a wait span and records the wait metrics. dial is the span
// context of the dial waited for; invalid if there was none.
func (r *Recorder) EndWait(span trace.Span, o Outcome, waited time.Duration, breakerState string, dial trace.SpanContext) {
	r.count(o, waited)
	r.endWaitSpan(span, o, waited, breakerState, dial)
}

func (r *Recorder) count(o Outcome, waited time.Duration) {
	ctx := context.Background()
	r.outcomes.Add(ctx, 1, r.outcomeAdd[o]...)
	r.waitHist.Record(ctx, waited.Seconds(), r.outcomeRec[o]...)
}

func (r *Recorder) endWaitSpan(span trace.Span, o Outcome, waited time.Duration, breakerState string, dial trace.SpanContext) {
	if !span.IsRecording() {
		span.End()
		return
	}
	if dial.IsValid() {
		span.AddLink(trace.Link{SpanContext: dial})
	}
	span.SetAttributes(OutcomeKey.String(o.String()), WaitSecondsKey.Float64(waited.Seconds()),
		BreakerStateKey.String(breakerState))
	if o != Acquired && o != Canceled {
		span.SetStatus(codes.Error, o.String())
	}
	span.End()
}

// Reject records a Get rejected at once by an open breaker: the outcome
// metrics, and a clusterpool.Wait span with outcome rejected and no wait
// only when ctx carries a recording span. Rejections of callers that are
// not being traced cost no span, which keeps them near gobreaker's own
// rejection cost.
func (r *Recorder) Reject(ctx context.Context, cluster, breakerState string) {
	r.count(Rejected, 0)
	if trace.SpanFromContext(ctx).IsRecording() {
		r.endWaitSpan(r.StartWait(ctx, cluster), Rejected, 0, breakerState, trace.SpanContext{})
	}
}

// StartDial starts the clusterpool.Dial span, the root of a new trace, and
// counts a dial in flight. The returned context carries the span.
func (r *Recorder) StartDial(ctx context.Context, cluster string, probe bool) (context.Context, trace.Span) {
	r.inflight.Add(ctx, 1)
	ctx, span := r.tracer.Start(ctx, DialSpan, trace.WithNewRoot(), trace.WithSpanKind(trace.SpanKindClient),
		trace.WithAttributes(ClusterKey.String(cluster), ProbeKey.Bool(probe)))
	return ctx, span
}

// EndDial ends a dial span and records the dial metrics. err is the dial's
// error, already free of credentials.
func (r *Recorder) EndDial(span trace.Span, res DialResult, took time.Duration, err error) {
	ctx := context.Background()
	r.inflight.Add(ctx, -1)
	r.dialHist.Record(ctx, took.Seconds(), r.dialRec[res]...)
	if span.IsRecording() {
		span.SetAttributes(DialResultKey.String(res.String()))
		if err != nil && res != DialCanceled {
			span.SetStatus(codes.Error, err.Error())
		}
	}
	span.End()
}

// ClusterAdded counts a new cluster in the given breaker state.
func (r *Recorder) ClusterAdded(state string) {
	r.clusters.Add(context.Background(), 1, r.states.stateOpt(state)...)
}

// ClusterRemoved stops counting a cluster in the given breaker state.
func (r *Recorder) ClusterRemoved(state string) {
	r.clusters.Add(context.Background(), -1, r.states.stateOpt(state)...)
}

// Transition records a breaker state change: the metrics, and an event on
// span when it is recording (span may be nil).
func (r *Recorder) Transition(span trace.Span, cluster, from, to string, openFor time.Duration) {
	ctx := context.Background()
	r.clusters.Add(ctx, -1, r.states.stateOpt(from)...)
	r.clusters.Add(ctx, 1, r.states.stateOpt(to)...)
	r.transitions.Add(ctx, 1, r.states.transOpt(from, to)...)
	if span != nil && span.IsRecording() {
		attrs := []attribute.KeyValue{ClusterKey.String(cluster), FromStateKey.String(from), ToStateKey.String(to)}
		if openFor > 0 {
			attrs = append(attrs, OpenForKey.Float64(openFor.Seconds()))
		}
		span.AddEvent(TransitionEvent, trace.WithAttributes(attrs...))
	}
}

// CallbackKey names the user callback of a recovered panic.
const CallbackKey = attribute.Key("clusterpool.callback")

// CallbackPanic counts a panic of the named user callback that the pool
// recovered, and adds an event to span when it is recording (span may be
// nil). The panic value is not recorded: it may hold anything.
func (r *Recorder) CallbackPanic(span trace.Span, callback string) {
	r.panics.Add(context.Background(), 1, metric.WithAttributes(CallbackKey.String(callback)))
	if span != nil && span.IsRecording() {
		span.AddEvent("clusterpool.callback.panic", trace.WithAttributes(CallbackKey.String(callback)))
	}
}
