package workload

import (
	"errors"
	"flag"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/clusterpool/clusterpool/bench/peers/protocol"
	"github.com/clusterpool/clusterpool/bench/peers/workload/idle"
)

// Role is what the driver does to a cluster's network during a run.
type Role string

// The roles of the -roles flag.
const (
	// Healthy clusters pass traffic all run long.
	Healthy Role = "healthy"
	// Dead clusters hold every connection all run long.
	Dead Role = "dead"
	// Recovering clusters hold every connection, then pass from a time the
	// driver chose; their objects count toward AllReconciled.
	Recovering Role = "recovering"
	// Flapping clusters switch between pass and hold.
	Flapping Role = "flapping"
	// Gray clusters answer, but slowly, with errors or throttled (the
	// driver's gray run), from -measure-from on.
	Gray Role = "gray"
)

// ClusterNameLabel is Cluster API's label naming an object's Cluster; the
// reconciled objects carry it.
const ClusterNameLabel = "cluster.x-k8s.io/cluster-name"

// Plan is one run as the driver describes it with flags.
type Plan struct {
	// Kubeconfig is the management cluster's kubeconfig file.
	Kubeconfig string
	// Namespace holds the Cluster objects, their kubeconfig Secrets and the
	// reconciled objects (ConfigMaps named <cluster>-<i>).
	Namespace string
	// Roles maps each Cluster's name to its role.
	Roles map[string]Role
	// Objects is the number of objects per cluster.
	Objects int
	// Workers is the controller's MaxConcurrentReconciles.
	Workers int
	// Work is how long a successful reconcile holds its worker at least:
	// the real requests, then a sleep for the rest (the model's 100 ms of
	// work).
	Work time.Duration
	// Duration bounds the run; without Saturate the run ends as soon as
	// every measured object reconciled once.
	Duration time.Duration
	// Saturate requeues an object as soon as it reconciled successfully.
	Saturate bool
	// Bucket is the width of the time series' buckets.
	Bucket time.Duration
	// WorkloadNamespace holds the ConfigMaps written in workload clusters.
	WorkloadNamespace string
	// Idle, if positive, makes the run a scale run: once every measured
	// object reconciled (or Duration passed) the process stays idle this
	// long and reports its idle figures (see Idle).
	Idle time.Duration
	// WatchNodes asks the strategy to hold a Node informer in every
	// workload cluster, as ClusterCache's NodeProviderIDIndex does (peers
	// that always do ignore it).
	WatchNodes bool
	// RecordTimings makes the run record the phases of successful
	// reconciles and client-go's timings of the workload requests
	// (Figures.Timings) into Timings, which Run sets before the peer's
	// Setup, so that the peer may add timings of its own.
	RecordTimings bool
	Timings       *Timings
	// SampleConnected, if positive, makes the run ask the strategy every
	// SampleConnected whether each cluster is connected and report the
	// answers and the unsuccessful reconciles (Figures.Availability; the
	// rotation scenario).
	SampleConnected time.Duration
	// SampleClusters, if not empty, are the clusters SampleConnected asks
	// about (all of Roles otherwise).
	SampleClusters []string
	// LoadRate and LoadWindow: in a scale run, after the idle window, Get
	// one cluster's ConfigMap LoadRate times a second for LoadWindow, the
	// clusters in turn, and report the latencies (Figures.Timings, package
	// load's names).
	LoadRate   float64
	LoadWindow time.Duration
	// DetectWithin, if positive, makes a scale run end with dead-cluster
	// detection: SampleConnected samples start only then, the peer
	// prints idle.Faults and waits for the driver, which kills some of the
	// sampled clusters, then samples until every one was reported not
	// connected, or DetectWithin passed (Figures.Availability).
	DetectWithin time.Duration
	// MeasureFrom, if not zero, is when the driver's gray faults start
	// (-measure-from, wall clock in Unix ms): Figures.HealthyOKP99Ms counts
	// the reconciles that started then or later, and Figures.RequestsSent
	// the requests sent then or later.
	MeasureFrom time.Time
}

// ParsePlan reads a Plan from args (the flags the driver passes).
func ParsePlan(args []string) (Plan, error) {
	var p Plan
	var common protocol.PeerFlags
	fs := flag.NewFlagSet("peer", flag.ContinueOnError)
	common.Define(fs)
	fs.IntVar(&p.Objects, "objects", 20, "objects per cluster")
	fs.IntVar(&p.Workers, "workers", 10, "MaxConcurrentReconciles")
	fs.DurationVar(&p.Work, "work", 100*time.Millisecond, "least time a successful reconcile holds its worker")
	fs.DurationVar(&p.Duration, "duration", time.Minute, "longest run")
	fs.BoolVar(&p.Saturate, "saturate", false, "requeue every object as soon as it reconciled")
	fs.DurationVar(&p.Bucket, "bucket", 5*time.Second, "time series bucket")
	fs.BoolVar(&p.RecordTimings, "timings", false, "record the phases of successful reconciles and client-go's request timings")
	fs.BoolVar(&p.WatchNodes, "watch-nodes", false, "hold a Node informer in every workload cluster")
	fs.DurationVar(&p.SampleConnected, "sample-connected", 0, "ask the strategy this often whether each cluster is connected; report when it was not, and when reconciles failed or requeued")
	fs.Func("sample-clusters", "comma-separated: the clusters -sample-connected asks about (default all)", func(v string) error {
		p.SampleClusters = strings.Split(v, ",")
		return nil
	})
	fs.Func("measure-from", "Unix ms: count the healthy clusters' successful reconciles' p99 and the requests sent per workload host from then on", func(v string) error {
		ms, err := strconv.ParseInt(v, 10, 64)
		p.MeasureFrom = time.UnixMilli(ms)
		return err
	})
	fs.DurationVar(&p.DetectWithin, "detect-within", 0, "scale run: end with dead-cluster detection, waiting at most this long for every sampled cluster to be reported not connected")
	if err := fs.Parse(args); err != nil {
		return Plan{}, err
	}
	p.Kubeconfig, p.Namespace, p.WorkloadNamespace = common.Kubeconfig, common.Namespace, common.WorkloadNamespace
	p.Idle, p.LoadRate, p.LoadWindow = common.Idle, common.LoadRate, common.LoadWindow
	var err error
	if p.Roles, err = parseRoles(common.Roles); err != nil {
		return Plan{}, err
	}
	switch {
	case p.Kubeconfig == "":
		return Plan{}, errors.New("workload: -kubeconfig is required")
	case p.Objects < 1 || p.Workers < 1 || p.Duration <= 0 || p.Bucket <= 0:
		return Plan{}, errors.New("workload: -objects, -workers, -duration and -bucket must be positive")
	}
	return p, nil
}

func parseRoles(s string) (map[string]Role, error) {
	s, err := idle.FlagValue(s)
	if err != nil {
		return nil, err
	}
	roles := map[string]Role{}
	for item := range strings.SplitSeq(s, ",") {
		name, role, ok := strings.Cut(item, "=")
		r := Role(role)
		if !ok || name == "" || !slices.Contains([]Role{Healthy, Dead, Recovering, Flapping, Gray}, r) {
			return nil, fmt.Errorf("workload: -roles item %q is not name=healthy|dead|recovering|flapping|gray", item)
		}
		roles[name] = r
	}
	if len(roles) == 0 {
		return nil, errors.New("workload: -roles lists no cluster")
	}
	return roles, nil
}

// Measured reports whether objects of a cluster with role r count toward
// "every object reconciled once": healthy ones and recovering ones (as in
// bench/sim).
func (r Role) Measured() bool { return r == Healthy || r == Recovering }

// ObjectName is the name of cluster's i-th object.
func ObjectName(cluster string, i int) string { return fmt.Sprintf("%s-%d", cluster, i) }
