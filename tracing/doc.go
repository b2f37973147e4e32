// Package tracing holds the OpenTelemetry spans and metrics of a cluster pool.
//
// A [Recorder] is built once per pool from a trace.TracerProvider and a
// metric.MeterProvider (the otel globals by default) and is called only off
// the pool's hit path: a Get that finds a connected client records nothing.
//
// Spans:
//   - clusterpool.Wait: one per Get that is not a hit, a child of the caller's
//     span. Attributes: clusterpool.cluster, clusterpool.outcome (see
//     [Outcome]), clusterpool.wait.seconds and clusterpool.breaker.state. It
//     links to the dial it waited for.
//   - clusterpool.Dial: one per dial, the root of a trace of its own (the dial
//     is the pool's, not any caller's). Attributes: clusterpool.cluster,
//     clusterpool.dial.result, clusterpool.dial.probe. Breaker transitions the
//     dial caused are events on it (clusterpool.breaker.transition).
//
// Metrics (instrument names are stable; none carries the cluster key, so
// cardinality does not grow with the fleet):
//   - clusterpool.wait.duration (histogram, s) by clusterpool.outcome
//   - clusterpool.get.outcomes (counter) by clusterpool.outcome
//   - clusterpool.dial.duration (histogram, s) by clusterpool.dial.result
//   - clusterpool.dials.inflight (up-down counter)
//   - clusterpool.breaker.clusters (up-down counter) by clusterpool.breaker.state:
//     how many clusters are in each breaker state
//   - clusterpool.breaker.transitions (counter) by from and to state
//   - clusterpool.callback.panics (counter) by callback: panics of user
//     callbacks (dialer, OnClose, IsFailure, FormatKey, ForKey) the pool
//     recovered
//
// The cluster key reaches telemetry only as the string the pool's key
// formatter returns; it must never contain credentials.
package tracing
