package protocol

// Availability is what a run with -sample-connected records besides its
// figures, for the driver's rotation scenario: when the strategy reported
// each cluster not connected, and when each reconcile that did not
// succeed ended. Times are wall clock, in Unix milliseconds.
type Availability struct {
	// SampleMs is the period at which every cluster's Strategy.Connected
	// was asked.
	SampleMs int64 `json:"sample_ms"`
	// FirstConnectedUnixMs: per cluster, the first sample that found it
	// connected (missing: never).
	FirstConnectedUnixMs map[string]int64 `json:"first_connected_unix_ms"`
	// NotConnected: per cluster, from its first connected sample on, the
	// intervals [from, to) from the first sample that found it not
	// connected to the first that found it connected again (an interval
	// still open at the end ends at the last sample). Each bound is within
	// SampleMs of the change.
	NotConnected map[string][][2]int64 `json:"not_connected_unix_ms,omitempty"`
	// BreakerOpen: per cluster, for a strategy with a circuit breaker, the
	// intervals [from, to) from the first sample that found its breaker
	// not closed (open or half-open) to the first that found it closed
	// again, from the first sample on; bounds as NotConnected's.
	BreakerOpen map[string][][2]int64 `json:"breaker_open_unix_ms,omitempty"`
	// Failed and Requeued: per cluster, when each reconcile of its
	// objects that returned an error, or RequeueAfter without success,
	// ended.
	Failed   map[string][]int64 `json:"failed_unix_ms,omitempty"`
	Requeued map[string][]int64 `json:"requeued_unix_ms,omitempty"`
}
