// Package metrics serves a clusterpool Pool's OpenTelemetry metrics on a
// controller-runtime manager's /metrics endpoint: [NewMeterProvider] returns
// an OpenTelemetry MeterProvider whose metrics are collected by Prometheus
// from controller-runtime's registry
// (sigs.k8s.io/controller-runtime/pkg/metrics.Registry), through the
// OpenTelemetry Prometheus exporter. Pass it as pool.Options.MeterProvider.
//
// The pool, the breaker and the tracing package know only the OpenTelemetry
// API; Prometheus enters a program only through this package. Programs that
// export over OTLP instead use the tracing/otlp module; both can run side by
// side (traces over OTLP, metrics on /metrics, as the examples/capi demo
// does).
//
// # Series
//
// The exporter translates the instrument names of package tracing with
// Prometheus' conventions (dots become underscores, the unit "s" becomes a
// _seconds suffix, counters get _total), and the attribute keys the same way:
//
//	clusterpool_wait_duration_seconds      histogram  clusterpool_outcome
//	clusterpool_get_outcomes_total         counter    clusterpool_outcome
//	clusterpool_dial_duration_seconds      histogram  clusterpool_dial_result
//	clusterpool_dials_inflight             gauge      (no label)
//	clusterpool_breaker_clusters           gauge      clusterpool_breaker_state
//	clusterpool_breaker_transitions_total  counter    clusterpool_breaker_from, clusterpool_breaker_to
//	clusterpool_callback_panics_total      counter    clusterpool_callback
//
// Histograms have _bucket (with le), _sum and _count series; the bucket
// bounds are the ones package tracing sets. The constants in names.go hold
// these names. No series carries the cluster key, so the number of series is
// bounded by the label values above (10 outcomes, 5 dial results, 3 breaker
// states, 5 callbacks), whatever the size of the fleet. A series appears once the pool
// has recorded something into it (the gauges after the first dial, or the
// first cluster).
//
// # Labels left out
//
// The exporter is built with WithoutScopeInfo and WithoutTargetInfo, and
// with the UnderscoreEscapingWithSuffixes translation pinned (the
// exporter's default today, which it plans to change):
//
//   - no otel_scope_name, otel_scope_version and otel_scope_schema_url
//     labels on every series: they would say "github.com/clusterpool/..." on
//     each of them and nothing else; the clusterpool_ prefix already does.
//   - no target_info series: on a manager's endpoint the target is the
//     manager, which Prometheus labels itself (job, instance); and two
//     OpenTelemetry exporters in one registry would both emit target_info
//     with the same labels, which fails the whole scrape (the manager
//     serves /metrics with promhttp.HTTPErrorOnError).
//   - units are kept: _seconds is the Prometheus convention for durations.
//
// # Calling it more than once
//
// The exporter registers an "unchecked" collector (it cannot describe its
// metrics in advance). Prometheus accepts a second such collector without an
// error but then fails every scrape, since both emit the same series; and it
// can never unregister one. NewMeterProvider therefore registers one
// collector per Registerer, once, and returns one MeterProvider per
// Registerer: a later call with the same Registerer returns the provider of
// the earlier call, so two pools of one process share it and their figures
// add up. Once that provider has been shut down, the next call builds a new
// one, and the registered collector reads from the new one (a test suite
// that starts a manager per test can call it in each test).
//
// # Name
//
// The package is named metrics after its directory, as Go packages are. A
// file that also imports controller-runtime's package of the same name
// renames one of them, e.g.
//
//	ctrlmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"
//	poolmetrics "github.com/clusterpool/clusterpool/kube/metrics"
package metrics
