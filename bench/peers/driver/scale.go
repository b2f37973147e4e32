package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
	"sync"
	"time"
)

// scaleOptions configure a scale run (-scale).
type scaleOptions struct {
	// Sizes are the fleet sizes, ascending: the fleet grows between them.
	Sizes []int `json:"sizes"`
	// Idle is each peer's idle window once connected; Baseline the window
	// that measures the apiservers' own requests with no peer running.
	Idle     time.Duration `json:"idle_ns"`
	Baseline time.Duration `json:"baseline_ns"`
	// Connect bounds the time until every cluster is connected.
	Connect time.Duration `json:"connect_ns"`
	// CCTMax: CCT v1.8.4 runs only on fleets up to this size.
	CCTMax int `json:"cct_max"`
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
	// max); Dials: connections the proxies accepted during the whole run,
	// per cluster.
	ConnsPerCluster float64 `json:"conns_per_cluster"`
	ConnsMin        int     `json:"conns_min"`
	ConnsMax        int     `json:"conns_max"`
	DialsPerCluster float64 `json:"dials_per_cluster"`
	Errors          int     `json:"errors"`
}

// baseline is the workload apiservers' own request rate on one fleet size.
type baseline struct {
	Clusters       int     `json:"clusters"`
	RequestsPerSec float64 `json:"requests_per_s"`
}

// scaleReport is what -json writes in a scale run (bench/peers/plot -scale
// reads it).
type scaleReport struct {
	Date       string        `json:"date"`
	Machine    string        `json:"machine"`
	Wall       string        `json:"wall,omitempty"`
	APIServers int           `json:"workload_apiservers"`
	Options    scaleOptions  `json:"options"`
	Baselines  []baseline    `json:"baselines"`
	Results    []scaleResult `json:"results"`
	Fits       []fit         `json:"fits"`
}

// runScale grows the fleet through o's sizes and runs every strategy on
// each, connected then idle.
func runScale(ctx context.Context, o options, bins map[string]string, root string, out io.Writer) error {
	start := time.Now()
	fmt.Fprintf(os.Stderr, "bench-scale: starting %d apiservers\n", 1+o.apiservers)
	f, err := startFleet(ctx, root, 0, o.apiservers, 1)
	if err != nil {
		return err
	}
	defer f.stop()
	rep := scaleReport{Date: start.UTC().Format(time.RFC3339), Machine: machine(), APIServers: o.apiservers, Options: o.scaleRun}
	for _, n := range o.scaleRun.Sizes {
		fmt.Fprintf(os.Stderr, "bench-scale: growing the fleet to %d Clusters\n", n)
		t := time.Now()
		if err := f.grow(ctx, n); err != nil {
			return err
		}
		fmt.Fprintf(os.Stderr, "bench-scale: %d Clusters in %s; baseline for %s\n", n, time.Since(t).Round(time.Second), o.scaleRun.Baseline)
		base, err := f.baseline(ctx, o.scaleRun.Baseline)
		if err != nil {
			return err
		}
		rep.Baselines = append(rep.Baselines, baseline{Clusters: n, RequestsPerSec: base})
		for _, s := range o.strategies {
			if s == "cct" && n > o.scaleRun.CCTMax {
				continue
			}
			fmt.Fprintf(os.Stderr, "bench-scale: %s on %d Clusters\n", s, n)
			r, err := runScalePeer(ctx, f, bins[s], s, n, o.scaleRun, base)
			if err != nil {
				return err
			}
			rep.Results = append(rep.Results, r)
		}
	}
	rep.Wall = time.Since(start).Round(time.Second).String()
	return finishScale(rep, o.jsonOut, out)
}

// finishScale fits rep's results, prints its tables to out and writes it
// to jsonOut (if not empty).
func finishScale(rep scaleReport, jsonOut string, out io.Writer) error {
	rep.Fits = fits(rep.Results)
	fmt.Fprintf(out, "Scale run of %s (%s): %v Clusters on %d workload apiservers, idle window %s; %s wall\n\n",
		rep.Date, rep.Machine, rep.Options.Sizes, rep.APIServers, rep.Options.Idle, rep.Wall)
	if err := writeScale(out, rep); err != nil {
		return err
	}
	return writeJSON(jsonOut, rep)
}

// rescale redoes the fits and tables of the scale run in o.scaleFrom.
func rescale(o options, out io.Writer) error {
	var rep scaleReport
	if err := readJSON(o.scaleFrom, &rep); err != nil {
		return err
	}
	return finishScale(rep, o.jsonOut, out)
}

// runScalePeer runs bin on the first n clusters of f (all healthy, one
// object each, no work): it connects them all, then stays idle for
// o.Idle while the driver counts the apiservers' requests and the
// process's connections.
func runScalePeer(ctx context.Context, f *fleet, bin, strategy string, n int, o scaleOptions, base float64) (scaleResult, error) {
	before := make([]uint64, n)
	for i, p := range f.Proxies[:n] {
		before[i] = p.Accepted()
	}
	roles := make([]string, n)
	for i, name := range f.Names[:n] {
		roles[i] = name + "=healthy"
	}
	args := []string{"-kubeconfig", f.Kubeconfig, "-namespace", namespace, "-roles", strings.Join(roles, ","),
		"-objects", "1", "-workers", "10", "-work", "0s", "-duration", o.Connect.String(), "-saturate=false",
		"-bucket", "5s", "-idle", o.Idle.String(), "-watch-nodes"}
	ctx, cancel := context.WithTimeout(ctx, o.Connect+o.Idle+3*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, args...)
	var stdout bytes.Buffer
	w := &window{f: f, n: n}
	ack, err := cmd.StdinPipe()
	if err != nil {
		return scaleResult{}, err
	}
	end := func() {
		w.end(cmd.Process.Pid)
		fmt.Fprintln(ack) // the peer waits for this line to go on
	}
	cmd.Stdout, cmd.Stderr = &stdout, &markerWriter{out: os.Stderr, onStart: w.start, onEnd: end}
	if err := cmd.Run(); err != nil {
		return scaleResult{}, fmt.Errorf("%s on %d clusters: %w", strategy, n, err)
	}
	var fig figures
	if err := json.Unmarshal(stdout.Bytes(), &fig); err != nil {
		return scaleResult{}, fmt.Errorf("%s: decoding its figures: %w", strategy, err)
	}
	if w.err != nil {
		return scaleResult{}, fmt.Errorf("%s on %d clusters: %w", strategy, n, w.err)
	}
	var dials uint64
	for i, p := range f.Proxies[:n] {
		dials += p.Accepted() - before[i]
	}
	idle := time.Duration(fig.IdleEndUnixMs-fig.IdleStartUnixMs) * time.Millisecond
	r := scaleResult{Clusters: n, Strategy: strategy, Version: fig.Version, ConnectS: fig.AllReconciled,
		RSSBytes: fig.RSSBytes, HeapBytes: fig.HeapBytes, Goroutines: fig.Goroutines,
		DialsPerCluster: float64(dials) / float64(n), Errors: fig.Errors}
	if idle > 0 {
		r.IdleCPUPerMin = fig.IdleCPUSeconds / idle.Minutes()
		r.IdleServerRequestsPerSec = w.requests/w.elapsed.Seconds() - base
		r.IdleClientRequestsPerSec = float64(fig.IdleRequests) / idle.Seconds()
		r.IdleRequestsPerSec = max(r.IdleServerRequestsPerSec, r.IdleClientRequestsPerSec)
	}
	r.ConnsPerCluster, r.ConnsMin, r.ConnsMax = connStats(w.conns)
	return r, nil
}

// window counts, between a peer's idle markers, the workload apiservers'
// requests and, at the end, the peer's connections to each cluster.
type window struct {
	f        *fleet
	n        int
	mu       sync.Mutex
	at       time.Time
	count    float64
	requests float64
	elapsed  time.Duration
	conns    []int
	err      error
}

func (w *window) start() {
	c, err := w.f.requestCount()
	w.mu.Lock()
	defer w.mu.Unlock()
	w.at, w.count, w.err = time.Now(), c, err
}

func (w *window) end(pid int) {
	c, err := w.f.requestCount()
	conns, cerr := connsPerCluster(pid, w.f.Proxies[:w.n])
	w.mu.Lock()
	defer w.mu.Unlock()
	w.elapsed = time.Since(w.at)
	// The window's first scrape of each apiserver is counted in the second.
	w.requests = c - w.count - float64(len(w.f.Workload))
	w.conns = conns
	if w.err == nil {
		w.err = err
	}
	if w.err == nil {
		w.err = cerr
	}
}

// markerWriter passes a peer's stderr through to out and calls onStart and
// onEnd on the idle markers' lines.
type markerWriter struct {
	out            io.Writer
	onStart, onEnd func()
	line           []byte
}

func (m *markerWriter) Write(p []byte) (int, error) {
	for _, b := range p {
		if b != '\n' {
			m.line = append(m.line, b)
			continue
		}
		switch string(m.line) {
		case idleMarker + "start":
			m.onStart()
		case idleMarker + "end":
			m.onEnd()
		default:
			m.out.Write(append(m.line, '\n'))
		}
		m.line = m.line[:0]
	}
	return len(p), nil
}

// idleMarker is bench/peers/workload/idle.Marker.
const idleMarker = "bench-peers: idle "
