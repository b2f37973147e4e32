package scale

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"time"

	"github.com/clusterpool/clusterpool/bench/peers/driver/internal/fleet"
	"github.com/clusterpool/clusterpool/bench/peers/protocol"
)

// sampleEvery is how often a peer asks whether each sampled cluster is
// connected in the detection phase.
const sampleEvery = 50 * time.Millisecond

// scaleRun is one peer's run on the first n clusters of a scale fleet.
type scaleRun struct {
	f        *scaleFleet
	bin      string
	strategy string
	n        int
	o        scaleOptions
	base     float64 // the apiservers' own requests per second
	detect   bool    // kill the sample after the load window
}

// peerArgs are the peer's flags: the workload protocol's, and those of the
// scale run's phases that the peer knows (flags: its -h).
func (sr scaleRun) peerArgs(roles string, flags map[string]bool) []string {
	args := []string{"-kubeconfig", sr.f.Kubeconfig, "-namespace", fleet.Namespace, "-roles", roles,
		"-objects", "1", "-workers", "10", "-work", "0s", "-duration", sr.o.Connect.String(), "-saturate=false",
		"-bucket", "5s", "-idle", sr.o.idleAt(sr.n).String(), "-watch-nodes"}
	if sr.o.LoadRate > 0 && flags["load-rate"] {
		args = append(args, "-load-rate", fmt.Sprint(sr.o.LoadRate), "-load-window", sr.o.LoadWindow.String())
	}
	if sr.detect && flags["detect-within"] {
		names, _ := sr.f.sample()
		args = append(args, "-sample-connected", sampleEvery.String(), "-sample-clusters", strings.Join(names, ","),
			"-detect-within", sr.o.DetectWithin.String())
	}
	return args
}

// rolesArg is the -roles value of the first n clusters, all healthy; one
// longer than an argument may be (128 KiB on Linux) goes through a file
// in dir ("@FILE").
func rolesArg(names []string, dir string) (string, error) {
	roles := make([]string, len(names))
	for i, name := range names {
		roles[i] = name + "=healthy"
	}
	v := strings.Join(roles, ",")
	if len(v) < 64<<10 {
		return v, nil
	}
	file := filepath.Join(dir, fmt.Sprintf("roles-%d", len(names)))
	if err := os.WriteFile(file, []byte(v), 0o600); err != nil {
		return "", err
	}
	return "@" + file, nil
}

// run runs the peer: it connects every cluster, stays idle while the
// driver counts its requests and connections, runs its load window and,
// with detect, reports the sample's clusters while the driver kills them.
func (sr scaleRun) run(ctx context.Context) (scaleResult, error) {
	before, err := sr.f.accepted(sr.n)
	if err != nil {
		return scaleResult{}, err
	}
	roles, err := rolesArg(sr.f.names[:sr.n], sr.f.Dir)
	if err != nil {
		return scaleResult{}, err
	}
	flags, err := peerFlags(ctx, sr.bin)
	if err != nil {
		return scaleResult{}, err
	}
	bound := sr.o.Connect + sr.o.idleAt(sr.n) + sr.o.LoadWindow + sr.o.DetectWithin + 5*time.Minute
	ctx, cancel := context.WithTimeout(ctx, bound)
	defer cancel()
	cmd := exec.CommandContext(ctx, sr.bin, sr.peerArgs(roles, flags)...)
	var stdout bytes.Buffer
	ack, err := cmd.StdinPipe()
	if err != nil {
		return scaleResult{}, err
	}
	w := &window{f: sr.f, n: sr.n}
	ph := &phases{}
	markers := map[string]func(){
		protocol.IdleMarker + "start": w.start,
		protocol.IdleMarker + "end": func() {
			w.end(cmd.Process.Pid)
			fmt.Fprintln(ack) // the peer waits for this line to go on
		},
		protocol.IdleMarker + protocol.FaultsMarker: func() {
			ph.faults, ph.err = sr.f.inject()
			fmt.Fprintln(ack)
		},
	}
	cmd.Stdout, cmd.Stderr = &stdout, &markerWriter{out: os.Stderr, on: markers}
	runErr := cmd.Run()
	if ph.faults != nil {
		t := time.Now()
		ph.err = errors.Join(ph.err, sr.f.restore(context.WithoutCancel(ctx)))
		fmt.Fprintf(os.Stderr, "bench-scale: the sample's faults ended in %s\n", time.Since(t).Round(100*time.Millisecond))
	}
	if runErr != nil {
		return scaleResult{}, fmt.Errorf("%s on %d clusters: %w", sr.strategy, sr.n, errors.Join(runErr, ph.err))
	}
	return sr.result(stdout.Bytes(), w, before, ph)
}

// phases is what the driver did in a peer's detection phase.
type phases struct {
	faults []injected
	err    error
}

// result reads the peer's figures into its scale result.
func (sr scaleRun) result(stdout []byte, w *window, before []uint64, ph *phases) (scaleResult, error) {
	var fig protocol.Figures
	if err := json.Unmarshal(stdout, &fig); err != nil {
		return scaleResult{}, fmt.Errorf("%s: decoding its figures: %w", sr.strategy, err)
	}
	if err := errors.Join(w.err, ph.err); err != nil {
		return scaleResult{}, fmt.Errorf("%s on %d clusters: %w", sr.strategy, sr.n, err)
	}
	var dials uint64
	for i := range w.accepted {
		dials += w.accepted[i] - before[i]
	}
	r := scaleResult{Clusters: sr.n, Strategy: sr.strategy, Version: fig.Version, ConnectS: fig.AllReconciled,
		RSSBytes: fig.RSSBytes, HeapBytes: fig.HeapBytes, Goroutines: fig.Goroutines,
		DialsPerCluster: float64(dials) / float64(sr.n), Errors: fig.Errors, PeakRSSBytes: fig.PeakRSSBytes,
		Memory: fig.Memory}
	if idle := time.Duration(fig.IdleEndUnixMs-fig.IdleStartUnixMs) * time.Millisecond; idle > 0 {
		r.IdleCPUPerMin = fig.IdleCPUSeconds / idle.Minutes()
		r.IdleServerRequestsPerSec = w.requests/w.elapsed.Seconds() - sr.base
		r.IdleClientRequestsPerSec = float64(fig.IdleRequests) / idle.Seconds()
		r.IdleRequestsPerSec = max(r.IdleServerRequestsPerSec, r.IdleClientRequestsPerSec)
	}
	r.ConnsPerCluster, r.ConnsMin, r.ConnsMax = connStats(w.conns)
	if g, ok := fig.Timings[protocol.LoadGetName]; ok {
		r.Load = &loadFigures{Gets: g.N, Failed: fig.Timings[protocol.LoadFailedName].N, P50Ms: g.P50, P99Ms: g.P99, MaxMs: g.Max}
	}
	if ph.faults != nil {
		r.Detections = detections(ph.faults, fig.Availability)
	}
	return r, nil
}

// window counts, between a peer's idle markers, the workload apiservers'
// requests and, at the end, the peer's connections to each cluster and
// those each cluster's proxy has accepted so far (the load window and the
// faults come after).
type window struct {
	f        *scaleFleet
	n        int
	mu       sync.Mutex
	at       time.Time
	count    float64
	requests float64
	elapsed  time.Duration
	conns    []int
	accepted []uint64
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
	conns, cerr := connsTo(pid, w.f.addrs[:w.n])
	accepted, aerr := w.f.accepted(w.n)
	w.mu.Lock()
	defer w.mu.Unlock()
	w.elapsed = time.Since(w.at)
	// The window's first scrape of each apiserver is counted in the second.
	w.requests = c - w.count - float64(len(w.f.Workload))
	w.conns, w.accepted = conns, accepted
	w.err = errors.Join(w.err, err, cerr, aerr)
}

// markerWriter passes a peer's stderr through to out and calls, for a line
// that is a key of on, its function instead.
type markerWriter struct {
	out  io.Writer
	on   map[string]func()
	line []byte
}

func (m *markerWriter) Write(p []byte) (int, error) {
	for _, b := range p {
		if b != '\n' {
			m.line = append(m.line, b)
			continue
		}
		if fn, ok := m.on[string(m.line)]; ok {
			fn()
		} else {
			m.out.Write(append(m.line, '\n'))
		}
		m.line = m.line[:0]
	}
	return len(p), nil
}

// flagLine matches a flag in a Go program's usage ("  -name value").
var flagLine = regexp.MustCompile(`(?m)^\s+-([a-z][a-z0-9-]*)`)

// peerFlags returns the flags peer bin knows, from its -h (a peer built
// from an older tree lacks the newer phases' flags: it does not run them).
func peerFlags(ctx context.Context, bin string) (map[string]bool, error) {
	var out bytes.Buffer
	cmd := exec.CommandContext(ctx, bin, "-h")
	cmd.Stdout, cmd.Stderr = &out, &out
	cmd.Run() // -h exits non-zero
	flags := map[string]bool{}
	for _, m := range flagLine.FindAllStringSubmatch(out.String(), -1) {
		flags[m[1]] = true
	}
	if !flags["roles"] {
		return nil, fmt.Errorf("%s -h: no -roles flag in %q", bin, out.String())
	}
	return flags, nil
}
