package main

// figures is what a peer prints on stdout: the JSON of
// bench/peers/workload.Figures (a module of its own, built against each
// peer's Kubernetes libraries, so this module cannot import it). Field
// names must match; TestProtocolMatchesWorkload checks them against the
// workload module's source.
type figures struct {
	Strategy             string           `json:"strategy"`
	Version              string           `json:"version"`
	StartUnixMs          int64            `json:"start_unix_ms"`
	Seconds              float64          `json:"run_s"`
	AllReconciled        float64          `json:"all_reconciled_s"`
	HealthyPerSec        float64          `json:"healthy_per_s"`
	Reconciles           int              `json:"reconciles"`
	P50Ms                float64          `json:"p50_ms"`
	P99Ms                float64          `json:"p99_ms"`
	OKP99Ms              float64          `json:"ok_p99_ms"`
	BlockedWorkerSeconds float64          `json:"blocked_worker_s"`
	Requeues             int              `json:"requeues"`
	Errors               int              `json:"errors"`
	ClusterDoneUnixMs    map[string]int64 `json:"cluster_done_unix_ms"`
	Series               []point          `json:"series"`
	RSSBytes             int64            `json:"rss_bytes"`
	PeakRSSBytes         int64            `json:"peak_rss_bytes"`
	Goroutines           int              `json:"goroutines"`
	IdleStartUnixMs      int64            `json:"idle_start_unix_ms,omitempty"`
	IdleEndUnixMs        int64            `json:"idle_end_unix_ms,omitempty"`
	IdleCPUSeconds       float64          `json:"idle_cpu_s,omitempty"`
	HeapBytes            int64            `json:"heap_bytes,omitempty"`
	IdleRequests         uint64           `json:"idle_requests,omitempty"`
	Memory               *memClasses      `json:"memory,omitempty"`
	Timings              map[string]dist  `json:"timings,omitempty"`
	Availability         *availability    `json:"availability,omitempty"`
}

// memClasses is bench/peers/workload/idle.Memory: where a peer's resident
// set is at the idle window's end, before the GC that HeapBytes follows
// (bytes). Field names must match; TestMemClassesMatchIdle checks them.
type memClasses struct {
	ObjectsBytes  int64 `json:"objects_bytes"`
	HeadroomBytes int64 `json:"headroom_bytes"`
	StacksBytes   int64 `json:"stacks_bytes"`
	RuntimeBytes  int64 `json:"runtime_bytes"`
	ReleasedBytes int64 `json:"released_bytes"`
	TotalBytes    int64 `json:"total_bytes"`
	OutsideBytes  int64 `json:"outside_bytes"`
	GoalBytes     int64 `json:"goal_bytes"`
}

// availability is workload.Availability: when each cluster was reported
// not connected and when reconciles failed or requeued (Unix ms).
type availability struct {
	SampleMs             int64                 `json:"sample_ms"`
	FirstConnectedUnixMs map[string]int64      `json:"first_connected_unix_ms"`
	NotConnected         map[string][][2]int64 `json:"not_connected_unix_ms,omitempty"`
	Failed               map[string][]int64    `json:"failed_unix_ms,omitempty"`
	Requeued             map[string][]int64    `json:"requeued_unix_ms,omitempty"`
}

// dist is one timing's summary (workload.Dist), in milliseconds.
type dist struct {
	N    int     `json:"n"`
	Mean float64 `json:"mean_ms"`
	P50  float64 `json:"p50_ms"`
	P90  float64 `json:"p90_ms"`
	P99  float64 `json:"p99_ms"`
	Max  float64 `json:"max_ms"`
}

// point is one bucket of a peer's time series (workload.Point).
type point struct {
	T             float64 `json:"t_s"`
	HealthyPerSec float64 `json:"healthy_per_s"`
	P99Ms         float64 `json:"p99_ms"`
	Reconciles    int     `json:"reconciles"`
}
