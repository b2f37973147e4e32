package metrics

// Names of the Prometheus metric families a pool's metrics become through
// [NewMeterProvider] (the OpenTelemetry instruments of package tracing,
// translated). Histograms are exposed as <name>_bucket, <name>_sum and
// <name>_count.
const (
	// WaitDuration is clusterpool.wait.duration: how long a Get that was not
	// a hit waited, by OutcomeLabel (histogram).
	WaitDuration = "clusterpool_wait_duration_seconds"
	// GetOutcomes is clusterpool.get.outcomes: Gets that were not hits, by
	// OutcomeLabel (counter).
	GetOutcomes = "clusterpool_get_outcomes_total"
	// DialDuration is clusterpool.dial.duration: how long dials took, by
	// DialResultLabel (histogram).
	DialDuration = "clusterpool_dial_duration_seconds"
	// DialsInflight is clusterpool.dials.inflight: dials queued for a permit
	// or running (gauge).
	DialsInflight = "clusterpool_dials_inflight"
	// BreakerClusters is clusterpool.breaker.clusters: clusters known to the
	// pool, by BreakerStateLabel (gauge).
	BreakerClusters = "clusterpool_breaker_clusters"
	// BreakerTransitions is clusterpool.breaker.transitions: breaker state
	// changes, by FromStateLabel and ToStateLabel (counter).
	BreakerTransitions = "clusterpool_breaker_transitions_total"
	// CallbackPanics is clusterpool.callback.panics: panics of user
	// callbacks the pool recovered, by CallbackLabel (counter).
	CallbackPanics = "clusterpool_callback_panics_total"
)

// Label names of those families (the attribute keys of package tracing,
// translated).
const (
	// OutcomeLabel is how a Get ended: acquired, timeout, canceled,
	// rejected, closed, failed, removed, queued, skipped or invalid.
	OutcomeLabel = "clusterpool_outcome"
	// DialResultLabel is how a dial ended: success, error, panic, canceled
	// or abandoned.
	DialResultLabel = "clusterpool_dial_result"
	// BreakerStateLabel is a breaker state: closed, open or half-open.
	BreakerStateLabel = "clusterpool_breaker_state"
	// FromStateLabel is the state a breaker left.
	FromStateLabel = "clusterpool_breaker_from"
	// ToStateLabel is the state a breaker entered.
	ToStateLabel = "clusterpool_breaker_to"
	// CallbackLabel names the callback that panicked: dial, OnClose,
	// IsFailure, FormatKey or ForKey.
	CallbackLabel = "clusterpool_callback"
)
