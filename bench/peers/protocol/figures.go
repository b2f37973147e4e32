package protocol

// Figures is what a workload peer (and, for the fields it has, the client-go
// floor) prints on stdout as one JSON object at the end of a run. Times are
// seconds unless the name says otherwise; -1 means "not reached".
type Figures struct {
	Strategy string `json:"strategy"`
	// Version is the Cluster API (or clusterpool) version of the peer.
	Version string `json:"version"`
	// StartUnixMs is when the manager was started (wall clock, ms).
	StartUnixMs int64   `json:"start_unix_ms"`
	Seconds     float64 `json:"run_s"`

	// AllReconciled: from start until every measured object reconciled
	// successfully once.
	AllReconciled float64 `json:"all_reconciled_s"`
	// HealthyPerSec: successful reconciles of healthy clusters' objects
	// per second over the run.
	HealthyPerSec float64 `json:"healthy_per_s"`
	Reconciles    int     `json:"reconciles"`
	P50Ms         float64 `json:"p50_ms"`
	P99Ms         float64 `json:"p99_ms"`
	// OKP99Ms is the p99 of the successful reconciles only. P99Ms counts
	// every reconcile, also those a strategy rejects at once: a strategy
	// that requeues more often has more instant reconciles, which lowers
	// its P99Ms whatever its successful reconciles take.
	OKP99Ms float64 `json:"ok_p99_ms"`
	// HealthyOKP99Ms is the p99 of the successful reconciles of healthy
	// clusters' objects that started at or after -measure-from (the whole
	// run without it): the gray run's figure for the clusters it leaves
	// alone.
	HealthyOKP99Ms float64 `json:"healthy_ok_p99_ms"`
	// BlockedWorkerSeconds: worker time spent getting clients, and in
	// failed requests to workload clusters.
	BlockedWorkerSeconds float64 `json:"blocked_worker_s"`
	// Requeues: reconciles that returned RequeueAfter because the
	// strategy had no client; Errors: reconciles that returned an error.
	Requeues int `json:"requeues"`
	Errors   int `json:"errors"`
	// ClusterDoneUnixMs: for each cluster all of whose objects reconciled
	// successfully at least once, when the last of them first did (wall
	// clock, ms): the driver subtracts the recovery time.
	ClusterDoneUnixMs map[string]int64 `json:"cluster_done_unix_ms"`
	// Series: per bucket of the run, healthy successes and reconcile p99.
	Series []Point `json:"series"`

	// RSSBytes and PeakRSSBytes: the process's resident set at the end and
	// its peak; Goroutines at the end, before shutdown.
	RSSBytes     int64 `json:"rss_bytes"`
	PeakRSSBytes int64 `json:"peak_rss_bytes"`
	Goroutines   int   `json:"goroutines"`

	// Scale runs only: the idle window's bounds (wall clock, ms), the
	// process's CPU time in it (user + system, s), and the live Go heap
	// after a GC at its end. RSSBytes and Goroutines are then taken at the
	// window's end too, before the GC.
	IdleStartUnixMs int64   `json:"idle_start_unix_ms,omitempty"`
	IdleEndUnixMs   int64   `json:"idle_end_unix_ms,omitempty"`
	IdleCPUSeconds  float64 `json:"idle_cpu_s,omitempty"`
	HeapBytes       int64   `json:"heap_bytes,omitempty"`
	// IdleRequests: requests the process sent to workload clusters in the
	// idle window, as client-go reports them (watches not included).
	IdleRequests uint64 `json:"idle_requests,omitempty"`
	// Memory: where RSSBytes is, read with it at the idle window's end.
	Memory *Memory `json:"memory,omitempty"`

	// Timings, if the peer records them (-timings): distributions of the
	// phases of successful reconciles and of client-go's requests, and the
	// load window's summaries (LoadGetName, LoadFailedName).
	Timings map[string]Dist `json:"timings,omitempty"`

	// RequestsSent, with -measure-from: per workload host (host:port),
	// the requests client-go sent it from then on, each attempt once
	// (client-go's own retries too), whether or not the transport below
	// client-go let it out: what the controller asked of the cluster.
	RequestsSent map[string]uint64 `json:"requests_sent,omitempty"`

	// Availability, with -sample-connected: when each cluster was reported
	// not connected, and when reconciles failed or requeued.
	Availability *Availability `json:"availability,omitempty"`
}

// Point is one bucket of the time series.
type Point struct {
	// T is the bucket's start, seconds since the run started.
	T float64 `json:"t_s"`
	// HealthyPerSec is the bucket's healthy successes per second.
	HealthyPerSec float64 `json:"healthy_per_s"`
	// P99Ms is the p99 of the reconciles that ended in the bucket (0 if
	// none did).
	P99Ms      float64 `json:"p99_ms"`
	Reconciles int     `json:"reconciles"`
}

// Dist summarizes one timing's samples, in milliseconds.
type Dist struct {
	N    int     `json:"n"`
	Mean float64 `json:"mean_ms"`
	P50  float64 `json:"p50_ms"`
	P90  float64 `json:"p90_ms"`
	P99  float64 `json:"p99_ms"`
	Max  float64 `json:"max_ms"`
}
