package main

import (
	"context"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"sigs.k8s.io/controller-runtime/pkg/envtest"
)

// chaosSetup is what one cache's run needs.
type chaosSetup struct {
	o                  options
	root, bin, capiDir string
	cache              string
	schedule           []fault
}

// chaosResult is one cache's run.
type chaosResult struct {
	Cache     string        `json:"cache"`
	Bound     chaosBound    `json:"bound"`
	Events    []faultEvent  `json:"events"`
	Classes   []classStats  `json:"classes"`
	PastBound []pastBound   `json:"past_bound"`
	Verdicts  chaosVerdicts `json:"verdicts"`
	Points    []tracePoint  `json:"points"`
	Warmup    float64       `json:"warmup_s"`
	// Note says where a result comes from when the report joins runs of
	// one schedule made at different times (written by hand; empty when
	// one run made every result).
	Note string `json:"note,omitempty"`
}

// chaosRun is one cache's run in progress.
type chaosRun struct {
	chaosSetup
	cf       *chaosFleet
	mgmt     *apiserverProc
	workload []*apiserverProc
	peer     *peerProc
	trace    *chaosTrace
	t0       time.Time

	// baseProf is the peer's goroutine profile at the baseline (profErr:
	// why there is none).
	baseProf goroutineProfile
	profErr  error

	mu     sync.Mutex
	events []faultEvent
}

// runChaosCache runs the schedule on a fresh fleet with cache.
func runChaosCache(ctx context.Context, s chaosSetup) (chaosResult, error) {
	a, err := startAuthenticator()
	if err != nil {
		return chaosResult{}, err
	}
	defer a.close()
	dir, err := os.MkdirTemp("", "bench-chaos-")
	if err != nil {
		return chaosResult{}, err
	}
	defer os.RemoveAll(dir)
	webhook, err := a.webhookKubeconfig(dir)
	if err != nil {
		return chaosResult{}, err
	}
	configure := func(_ int, env *envtest.Environment) {
		env.ControlPlane.GetAPIServer().Configure().
			Append("authentication-token-webhook-config-file", webhook).
			Append("authentication-token-webhook-version", "v1").
			Append("authentication-token-webhook-cache-ttl", webhookCacheTTL.String())
	}
	fmt.Fprintf(os.Stderr, "bench-chaos: starting %d apiservers, %d Clusters × %d Machines\n", 1+s.o.apiservers, s.o.cfg.Clusters, s.o.chaos.Machines)
	f, err := startFleet(ctx, s.root, 0, s.o.apiservers, 0, configure)
	if err != nil {
		return chaosResult{}, err
	}
	defer f.stop()
	r := &chaosRun{chaosSetup: s}
	defer r.close()
	if err := r.prepare(ctx, f, a); err != nil {
		return chaosResult{}, err
	}
	logPath := filepath.Join(os.TempDir(), fmt.Sprintf("bench-chaos-%d-%s-peer.log", os.Getpid(), s.cache))
	logFile, err := os.Create(logPath)
	if err != nil {
		return chaosResult{}, err
	}
	defer logFile.Close()
	fmt.Fprintf(os.Stderr, "bench-chaos: the manager's stderr goes to %s\n", logPath)
	return r.run(ctx, logFile)
}

// prepare finds the apiserver processes and creates the Clusters.
func (r *chaosRun) prepare(ctx context.Context, f *fleet, a *authenticator) error {
	if err := mhcObjects(ctx, f, r.capiDir, 0); err != nil { // the CRDs
		return err
	}
	if err := installMachineCRDs(ctx, f.mgmt, r.capiDir); err != nil {
		return err
	}
	cf, err := newChaosFleet(f, a, r.cache, r.o.chaos.Machines)
	if err != nil {
		return err
	}
	r.cf = cf
	if r.mgmt, err = findAPIServer(f.envs[0].Config); err != nil {
		return err
	}
	for _, cfg := range f.Workload {
		p, err := findAPIServer(cfg)
		if err != nil {
			return err
		}
		r.workload = append(r.workload, p)
	}
	errs := make(chan error, r.o.cfg.Clusters)
	sem := make(chan struct{}, growWorkers)
	for i := range r.o.cfg.Clusters {
		sem <- struct{}{}
		go func() {
			defer func() { <-sem }()
			errs <- cf.create(ctx, i, i%len(f.Workload), 1)
		}()
	}
	for range r.o.cfg.Clusters {
		if err := <-errs; err != nil {
			return err
		}
	}
	return nil
}

// hostOf is a URL's host:port.
func hostOf(u string) string {
	p, err := url.Parse(u)
	if err != nil {
		return u
	}
	return p.Host
}

// close ends the peer and the processes the run started again.
func (r *chaosRun) close() {
	if r.peer != nil {
		r.peer.stop()
	}
	if r.mgmt != nil {
		r.mgmt.close()
	}
	for _, p := range r.workload {
		p.close()
	}
	if r.cf != nil {
		r.cf.closeRetired()
	}
}

// run starts the peer, waits for the fleet to settle, takes the
// baseline, plays the schedule and judges.
func (r *chaosRun) run(ctx context.Context, log *os.File) (chaosResult, error) {
	res := chaosResult{Cache: r.cache, Bound: boundFor(r.cache)}
	args := []string{"-chaos", "-kubeconfig", r.cf.Kubeconfig, "-namespace", namespace, "-cache", r.cache,
		"-sample", chaosSampleEvery.String(), "-hung-after", chaosHungAfter.String(), "-pprof", "127.0.0.1:0"}
	if r.o.chaos.Gates != "" {
		args = append(args, "-feature-gates", r.o.chaos.Gates)
	}
	r.peer = newPeerProc(r.bin, args, log)
	if r.o.chaos.Race {
		r.peer.env = []string{"GORACE=halt_on_error=1"}
	}
	r.trace = newChaosTrace(r.cf.live)
	collected := make(chan struct{})
	go func() { r.trace.collect(r.peer.Samples); close(collected) }()
	defer func() { r.peer.stop(); close(r.peer.Samples); <-collected }()
	if err := r.peer.start(); err != nil {
		return res, err
	}
	pctx, stopPoking := context.WithCancel(ctx)
	defer stopPoking()
	go r.poke(pctx)
	start := time.Now()
	live := r.cf.live()
	r.trace.await(append(live, r.cf.machinesOf(live)...), start)
	if err := r.waitSettled(ctx, r.o.chaos.Warmup); err != nil {
		return res, fmt.Errorf("%s: before the first fault: %w", r.cache, err)
	}
	res.Warmup = time.Since(start).Seconds()
	fmt.Fprintf(os.Stderr, "bench-chaos: %s: every Cluster connected and reconciled after %.1f s; baseline in %s\n", r.cache, res.Warmup, r.o.chaos.Steady)
	sleepCtx(ctx, r.o.chaos.Steady)
	base, err := r.fullSamples(ctx, chaosBaselineSamples)
	if err != nil {
		return res, err
	}
	r.baseProf, r.profErr = r.goroutines(ctx, "baseline")
	r.t0 = time.Now()
	r.trace.setT0(r.t0)
	r.play(ctx)
	fmt.Fprintf(os.Stderr, "bench-chaos: %s: every fault ended after %s; judging\n", r.cache, time.Since(r.t0).Round(time.Second))
	res.Verdicts = r.judgeEnd(ctx, medianStats(base))
	res.Events = r.sortedEvents()
	points, successes, crossed, hung, panics := r.trace.snapshot()
	res.Points = points
	refs, err := r.cf.checkNodeRefs(ctx)
	if err != nil {
		res.Verdicts.Restore = strings.TrimPrefix(res.Verdicts.Restore+"; "+err.Error(), "; ")
	}
	res.Verdicts.setChecks(append(crossed, refs...), hung, panics, r.peer.crashed())
	secs := map[string][]float64{}
	for c, ts := range successes {
		secs[c] = secondsSince(r.t0, ts)
	}
	samples, interrupted := timeBack(res.Events, secs, r.cf.keysOf)
	res.Classes, res.PastBound = classTable(samples, interrupted, res.Bound, res.Events)
	return res, nil
}

// poke annotates the MachineHealthChecks and Machines waiting for a
// reconcile, every pokeEvery, until ctx ends; it also starts the peer
// again if it crashed.
func (r *chaosRun) poke(ctx context.Context) {
	t := time.NewTicker(pokeEvery)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		if err := r.peer.restartIfCrashed(); err != nil {
			fmt.Fprintln(os.Stderr, "bench-chaos: starting the crashed peer again:", err)
		}
		for _, c := range r.trace.waiting() {
			if err := r.cf.poke(ctx, c); err != nil && ctx.Err() == nil {
				break // the management apiserver is down: next time
			}
		}
	}
}

// waitSettled waits (within d) until every live cluster is connected and
// none waits for a reconcile.
func (r *chaosRun) waitSettled(ctx context.Context, d time.Duration) error {
	deadline := time.Now().Add(d)
	for {
		live := r.cf.live()
		down, _ := r.trace.notConnected(live)
		waiting := r.trace.waiting()
		if len(down) == 0 && len(waiting) == 0 {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("after %s: %d of %d Clusters not connected (%v), %d not reconciled (%v)", d, len(down), len(live), down, len(waiting), waiting)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(time.Second):
		}
	}
}

// fullSamples asks for n full samples, 2 s apart, and returns them.
func (r *chaosRun) fullSamples(ctx context.Context, n int) ([]chaosSample, error) {
	since := time.Now().Truncate(time.Millisecond) // samples carry milliseconds
	for range n {
		r.peer.askFull()
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(2 * time.Second):
		}
	}
	deadline := time.Now().Add(30 * time.Second)
	for {
		got := r.trace.fullsSince(since)
		if len(got) >= n {
			return got, nil
		}
		if time.Now().After(deadline) {
			return got, fmt.Errorf("%d of %d full samples from the peer", len(got), n)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// record adds an applied fault, and makes the run wait for a successful
// reconcile of each Machine of its clusters since its end (play waits for
// their MachineHealthChecks'; poke pokes both until then).
func (r *chaosRun) record(e faultEvent) {
	r.trace.await(r.cf.machinesOf(e.Clusters), r.t0.Add(time.Duration(e.End*float64(time.Second))))
	r.mu.Lock()
	defer r.mu.Unlock()
	r.events = append(r.events, e)
}

// sortedEvents returns the recorded faults by ID.
func (r *chaosRun) sortedEvents() []faultEvent {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := make([]faultEvent, len(r.events))
	for _, e := range r.events {
		if e.ID < len(out) {
			out[e.ID] = e
		}
	}
	return out
}

// since is t in seconds since the fault window opened.
func (r *chaosRun) since(t time.Time) float64 { return t.Sub(r.t0).Seconds() }
