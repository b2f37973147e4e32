package reqguard

import (
	"context"
	"errors"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/trace"

	"github.com/clusterpool/clusterpool/pool"
)

// Reasons of a rejection (attribute clusterpool.reason).
const (
	ReasonCircuitOpen  = "circuit_open"
	ReasonBulkheadFull = "bulkhead_full"
	ReasonStopped      = "stopped"
	ReasonThrottled    = "throttled"
)

// Metrics are the guards' instruments, shared by every cluster of a dialer.
// They carry no cluster attribute, so their cardinality does not grow with
// the fleet. A nil *Metrics counts nothing.
type Metrics struct {
	rejectedC  metric.Int64Counter
	canceledC  metric.Int64Counter
	firstByteC metric.Int64Counter
}

// NewMetrics creates the instruments on mp (the otel global if nil):
// clusterpool.request.rejected (attribute clusterpool.reason: circuit_open,
// bulkhead_full, stopped, and throttled: a counted request ended at its
// 429, see Flight.Throttle), clusterpool.request.canceled (in flight when the
// client was stopped) and clusterpool.request.first_byte_timeouts.
func NewMetrics(mp metric.MeterProvider) (*Metrics, error) {
	if mp == nil {
		mp = otel.GetMeterProvider()
	}
	m := mp.Meter("github.com/clusterpool/clusterpool/kube")
	var ms Metrics
	var err, e error
	ms.rejectedC, e = m.Int64Counter("clusterpool.request.rejected",
		metric.WithDescription("Requests on an established client rejected before being sent"))
	err = errors.Join(err, e)
	ms.canceledC, e = m.Int64Counter("clusterpool.request.canceled",
		metric.WithDescription("Requests in flight canceled because their cluster's client was stopped (breaker opened, removed)"))
	err = errors.Join(err, e)
	ms.firstByteC, e = m.Int64Counter("clusterpool.request.first_byte_timeouts",
		metric.WithDescription("Requests canceled for receiving no response headers within their first-byte deadline"))
	err = errors.Join(err, e)
	if err != nil {
		return nil, err
	}
	return &ms, nil
}

// reasonOf names the rejection err.
func reasonOf(err error) string {
	switch {
	case errors.Is(err, pool.ErrCircuitOpen):
		return ReasonCircuitOpen
	case errors.Is(err, ErrBulkheadFull):
		return ReasonBulkheadFull
	case errors.Is(err, ErrThrottled):
		return ReasonThrottled
	}
	return ReasonStopped
}

// rejected counts a rejection and adds it as an event to ctx's span, if it
// records: a rejection is part of the caller's trace, not a trace of its own.
func (m *Metrics) rejected(ctx context.Context, cluster string, err error) {
	reason := attribute.String("clusterpool.reason", reasonOf(err))
	if m != nil {
		m.rejectedC.Add(ctx, 1, metric.WithAttributes(reason))
	}
	if span := trace.SpanFromContext(ctx); span.IsRecording() {
		span.AddEvent("clusterpool.request.rejected", trace.WithAttributes(reason,
			attribute.String("clusterpool.cluster", cluster)))
	}
}

// canceled counts a request canceled by Stop, and adds an event to its
// caller's span.
func (m *Metrics) canceled(ctx context.Context, cluster string, err error) {
	if m != nil {
		m.canceledC.Add(ctx, 1)
	}
	if span := trace.SpanFromContext(ctx); span.IsRecording() {
		span.AddEvent("clusterpool.request.canceled", trace.WithAttributes(
			attribute.String("clusterpool.reason", reasonOf(err)), attribute.String("clusterpool.cluster", cluster)))
	}
}

func (m *Metrics) firstByteTimeout(ctx context.Context) {
	if m != nil {
		m.firstByteC.Add(ctx, 1)
	}
}
