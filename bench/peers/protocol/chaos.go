package protocol

// ChaosSample is one line of the capi peer's -chaos output on stdout, read
// by the driver's chaos experiment. A "full" line on the peer's stdin asks
// for a full sample; the peer stops when its stdin closes.
type ChaosSample struct {
	UnixMs int64 `json:"t"`
	// Full samples carry HeapBytes, the live heap after a GC, and Series,
	// the metric series of controller-runtime's registry per cluster name
	// they carry (as a "cluster" label or a "namespace/name" value).
	Full      bool           `json:"full,omitempty"`
	HeapBytes uint64         `json:"heap_bytes,omitempty"`
	Series    map[string]int `json:"series,omitempty"`
	// Clusters in the manager's cache, and those GetClient answers for.
	Clusters  int      `json:"clusters"`
	Connected []string `json:"connected"`
	// Reconciled: the MachineHealthChecks and Machines reconciled
	// successfully since the previous sample, by name, with the end of the
	// last such reconcile (Unix ms). A Machine's counts only if it listed
	// the Machine's Node through the cluster's client.
	Reconciled map[string]int64 `json:"reconciled,omitempty"`
	Goroutines int              `json:"goroutines"`
	FDs        int              `json:"fds"`
	TCP        int              `json:"tcp"`
	// Panics: controller_runtime_reconcile_panics_total, all controllers.
	Panics  int        `json:"panics"`
	Crossed []Crossing `json:"crossed,omitempty"`
	Hung    []HungCall `json:"hung,omitempty"`
	// PProf is where the process serves net/http/pprof (-pprof).
	PProf string `json:"pprof,omitempty"`
}

// Crossing is a Node read through a cluster's client that is not that
// cluster's: another cluster's, or an earlier incarnation's of the same
// name (a client that outlived its Cluster).
type Crossing struct {
	Cluster            string `json:"cluster"`
	Node               string `json:"node"`
	NodeCluster        string `json:"node_cluster"`
	NodeIncarnation    string `json:"node_incarnation"`
	ClusterIncarnation string `json:"cluster_incarnation"`
	UnixMs             int64  `json:"t"`
}

// HungCall is a call through the checked ClusterCache or its clients that
// took longer than -hung-after (Ended) or was still running after it.
type HungCall struct {
	Op          string  `json:"op"`
	Cluster     string  `json:"cluster"`
	StartUnixMs int64   `json:"start"`
	Seconds     float64 `json:"s"`
	Ended       bool    `json:"ended"`
}
