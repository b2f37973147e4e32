package scale

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"time"

	"github.com/clusterpool/clusterpool/bench/peers/driver/internal/fleet"
	"github.com/clusterpool/clusterpool/bench/peers/protocol"
)

// scaleOptions configure a scale run (-scale).
type scaleOptions struct {
	// Sizes are the fleet sizes, ascending: the fleet grows between them.
	Sizes []int `json:"sizes"`
	// Idle is each peer's idle window once connected, IdleBig the window
	// on fleets above bigFleet; Baseline the window that measures the
	// apiservers' own requests with no peer running.
	Idle     time.Duration `json:"idle_ns"`
	IdleBig  time.Duration `json:"idle_big_ns,omitempty"`
	Baseline time.Duration `json:"baseline_ns"`
	// Connect bounds the time until every cluster is connected.
	Connect time.Duration `json:"connect_ns"`
	// CCTMax: CCT v1.8.4 runs only on fleets up to this size; PeerMax:
	// the same for the Extra peers.
	CCTMax  int `json:"cct_max"`
	PeerMax int `json:"peer_max,omitempty"`
	// LoadRate and LoadWindow: after the idle window, each peer Gets
	// LoadRate ConfigMaps a second, of the clusters in turn, for
	// LoadWindow.
	LoadRate   float64       `json:"load_rate,omitempty"`
	LoadWindow time.Duration `json:"load_window_ns,omitempty"`
	// PerFault clusters per fault class are killed after the load window
	// while DetectPeers report whether they are connected, for at most
	// DetectWithin.
	PerFault     int           `json:"per_fault,omitempty"`
	DetectWithin time.Duration `json:"detect_within_ns,omitempty"`
	DetectPeers  []string      `json:"detect_peers,omitempty"`
	// Extra are more peers speaking the workload protocol, by name (the
	// hook for the Cluster API drop-in: -peer dropin=PATH).
	Extra map[string]string `json:"extra,omitempty"`
}

// scaleResult is one peer's figures on one fleet size.
type scaleResult struct {
	Clusters int    `json:"clusters"`
	Strategy string `json:"strategy"`
	Version  string `json:"version"`
	// ConnectS: from the process's start of work until every cluster's
	// object was written once through the peer's client (-1: not within
	// Connect).
	ConnectS   float64 `json:"connect_s"`
	RSSBytes   int64   `json:"rss_bytes"`
	HeapBytes  int64   `json:"heap_bytes"`
	Goroutines int     `json:"goroutines"`
	// IdleCPUPerMin: CPU seconds the process used per minute of its idle
	// window. Its requests per second in the window are counted twice:
	// IdleServerRequestsPerSec by the workload apiservers
	// (apiserver_request_total, less their own: the baseline), which do
	// not count GET / (ClusterCache's health probe); and
	// IdleClientRequestsPerSec by the process (client-go's latency hook),
	// which does not see requests made without client-go's REST client
	// (clusterpool's /readyz probe). IdleRequestsPerSec is the larger.
	IdleCPUPerMin            float64 `json:"idle_cpu_s_per_min"`
	IdleRequestsPerSec       float64 `json:"idle_requests_per_s"`
	IdleServerRequestsPerSec float64 `json:"idle_server_requests_per_s"`
	IdleClientRequestsPerSec float64 `json:"idle_client_requests_per_s"`
	// Conns: established TCP connections from the process to the
	// clusters' proxies at the idle window's end, per cluster (mean, min,
	// max); Dials: connections the proxies accepted until then, per
	// cluster.
	ConnsPerCluster float64 `json:"conns_per_cluster"`
	ConnsMin        int     `json:"conns_min"`
	ConnsMax        int     `json:"conns_max"`
	DialsPerCluster float64 `json:"dials_per_cluster"`
	Errors          int     `json:"errors"`
	// PeakRSSBytes is the process's peak resident set (VmHWM).
	PeakRSSBytes int64 `json:"peak_rss_bytes,omitempty"`
	// Memory: where RSSBytes is (nil from a peer that does not say).
	Memory *protocol.Memory `json:"memory,omitempty"`
	// Load: the load window's Gets; Detections: the killed clusters.
	Load       *loadFigures `json:"load,omitempty"`
	Detections []detection  `json:"detections,omitempty"`
}

// loadFigures are a peer's Gets in the load window: how many, how many
// failed, and the latency of all (ms).
type loadFigures struct {
	Gets   int     `json:"gets"`
	Failed int     `json:"failed"`
	P50Ms  float64 `json:"p50_ms"`
	P99Ms  float64 `json:"p99_ms"`
	MaxMs  float64 `json:"max_ms"`
}

// bigFleet: fleets above it idle for IdleBig, if set (a rate is measured
// over as many cluster-seconds in a shorter window, but a window shorter
// than a periodic cadence reads where it fell in the period).
const bigFleet = 1000

// idleAt is the idle window on a fleet of n.
func (o scaleOptions) idleAt(n int) time.Duration {
	if n > bigFleet && o.IdleBig > 0 {
		return o.IdleBig
	}
	return o.Idle
}

// baseline is the workload apiservers' own request rate on one fleet size.
type baseline struct {
	Clusters       int     `json:"clusters"`
	RequestsPerSec float64 `json:"requests_per_s"`
}

// scaleReport is what -json writes in a scale run (bench/plot -scale
// reads it).
type scaleReport struct {
	fleet.Stamp
	Wall       string        `json:"wall,omitempty"`
	APIServers int           `json:"workload_apiservers"`
	Options    scaleOptions  `json:"options"`
	Baselines  []baseline    `json:"baselines"`
	Results    []scaleResult `json:"results"`
	Fits       []fit         `json:"fits"`
	// Skipped: the peers (or fleet sizes) not run, and why.
	Skipped []string `json:"skipped,omitempty"`
}

// runScale grows the fleet through o's sizes and runs every strategy on
// each: connected, idle, under load, and (DetectPeers) while the sample is
// killed. A size or peer that would not fit the machine is skipped, with
// the reason in the report.
func runScale(ctx context.Context, o *Options, bins map[string]string) error {
	start := time.Now()
	so := o.run
	so.Extra = o.Extra
	so.DetectPeers = detectPeers(so, o.Strategies)
	fmt.Fprintf(os.Stderr, "bench-scale: starting the apiservers (%d workload, %d for the sample)\n", o.APIServers, 2*min(so.PerFault, 1))
	sf, err := startScaleFleet(ctx, o.Root, o.APIServers, so.PerFault)
	if err != nil {
		return err
	}
	defer sf.stop()
	rep := scaleReport{Stamp: fleet.NewStamp(start), APIServers: o.APIServers, Options: so}
	lim := newScaleLimits()
	for _, n := range so.Sizes {
		if reason := lim.fleetFits(n, len(sf.names)); reason != "" {
			rep.Skipped = append(rep.Skipped, fmt.Sprintf("%d Clusters and above: %s", n, reason))
			break
		}
		base, err := growScale(ctx, sf, n, so.Baseline)
		if err != nil {
			return err
		}
		lim.fleetGrown(n)
		rep.Baselines = append(rep.Baselines, baseline{Clusters: n, RequestsPerSec: base})
		for _, s := range o.Strategies {
			if reason := lim.peerFits(s, n, so); reason != "" {
				rep.Skipped = append(rep.Skipped, fmt.Sprintf("%s at %d: %s", s, n, reason))
				continue
			}
			fmt.Fprintf(os.Stderr, "bench-scale: %s on %d Clusters\n", s, n)
			t := time.Now()
			sr := scaleRun{f: sf, bin: bins[s], strategy: s, n: n, o: so, base: base,
				detect: so.PerFault > 0 && slices.Contains(so.DetectPeers, s)}
			r, err := sr.run(ctx)
			if err != nil {
				lim.failed(s, err)
				rep.Skipped = append(rep.Skipped, fmt.Sprintf("%s at %d and above: %v", s, n, err))
				continue
			}
			lim.ran(r)
			rep.Results = append(rep.Results, r)
			fmt.Fprintf(os.Stderr, "bench-scale: %s on %d Clusters took %s\n", s, n, time.Since(t).Round(time.Second))
		}
	}
	rep.Wall = time.Since(start).Round(time.Second).String()
	return errors.Join(finishScale(rep, o.JSONOut, o.Out), neverRan(o.Strategies, rep))
}

// growScale grows sf to n Clusters and measures the apiservers' own
// requests per second over d.
func growScale(ctx context.Context, sf *scaleFleet, n int, d time.Duration) (float64, error) {
	fmt.Fprintf(os.Stderr, "bench-scale: growing the fleet to %d Clusters\n", n)
	t := time.Now()
	if err := sf.grow(ctx, n); err != nil {
		return 0, err
	}
	fmt.Fprintf(os.Stderr, "bench-scale: %d Clusters in %s; baseline for %s\n", n, time.Since(t).Round(time.Second), d)
	return sf.baseline(ctx, d)
}

// neverRan is an error naming the strategies with no result in rep.
func neverRan(strategies []string, rep scaleReport) error {
	var errs []error
	for _, s := range strategies {
		if !slices.ContainsFunc(rep.Results, func(r scaleResult) bool { return r.Strategy == s }) {
			errs = append(errs, fmt.Errorf("bench-scale: %s ran on no fleet size", s))
		}
	}
	return errors.Join(errs...)
}

// finishScale fits rep's results, prints its tables to out and writes it
// to jsonOut (if not empty).
func finishScale(rep scaleReport, jsonOut string, out io.Writer) error {
	rep.Fits = fits(rep.Results)
	fmt.Fprintf(out, "Scale run of %s (%s): %v Clusters on %d workload apiservers, idle window %s; %s wall\n\n",
		rep.Date, rep.Machine, rep.Options.Sizes, rep.APIServers, idleCell(rep.Options), rep.Wall)
	if err := writeScale(out, rep); err != nil {
		return err
	}
	return fleet.WriteJSON(jsonOut, rep)
}

// rescale redoes the fits and tables of the scale run in o.From.
func rescale(o *Options) error {
	var rep scaleReport
	if err := protocol.ReadReport(o.From, &rep); err != nil {
		return err
	}
	return finishScale(rep, o.JSONOut, o.Out)
}
