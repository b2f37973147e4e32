package protocol

// MHCFigures is what the capi peer prints on stdout at the end of a -mhc
// run, as one JSON object.
type MHCFigures struct {
	Cache       string  `json:"cache"`
	Version     string  `json:"version"`
	StartUnixMs int64   `json:"start_unix_ms"`
	Seconds     float64 `json:"run_s"`
	// ReconcileErrors counts the "Reconciler error" log lines of the
	// machinehealthcheck controller; ErrorKinds splits them by kind and
	// ErrorsByMHC by MachineHealthCheck; OtherErrors counts those of other
	// controllers (the ClusterCache's own), by controller.
	ReconcileErrors int            `json:"reconcile_errors"`
	ErrorKinds      map[string]int `json:"error_kinds"`
	ErrorsByMHC     map[string]int `json:"errors_by_mhc"`
	OtherErrors     map[string]int `json:"other_errors,omitempty"`
	// Reconciles are the machinehealthcheck controller's reconciles by
	// result (success, error, requeue_after, requeue).
	Reconciles   map[string]int `json:"reconciles"`
	RSSBytes     int64          `json:"rss_bytes"`
	PeakRSSBytes int64          `json:"peak_rss_bytes"`
	Goroutines   int            `json:"goroutines"`
}
