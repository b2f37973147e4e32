package chaos

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"sync"
	"time"

	"sigs.k8s.io/controller-runtime/pkg/envtest"

	"github.com/clusterpool/clusterpool/bench/peers/driver/internal/fleet"
)

// chaosSetup is what the run needs.
type chaosSetup struct {
	o                  *Options
	root, bin, capiDir string
	caches             []string
	schedule           []fault
}

// chaosResult is one cache's side of the run.
type chaosResult struct {
	Cache string `json:"cache"`
	// Title names the cache in the report (cacheTitle).
	Title     string       `json:"title,omitempty"`
	Bound     chaosBound   `json:"bound"`
	Events    []faultEvent `json:"events"`
	Classes   []classStats `json:"classes"`
	PastBound []pastBound  `json:"past_bound"`
	// Gray: the gray classes' figures (grayTable).
	Gray     []grayStats   `json:"gray"`
	Verdicts chaosVerdicts `json:"verdicts"`
	Points   []tracePoint  `json:"points"`
	Warmup   float64       `json:"warmup_s"`
	// Samples is every time back the classes sum up, for finding why a
	// slow one was slow (issue 44: pair them with the other cache's, and
	// with the pool's spans). They go to a file of their own beside the
	// report's JSON (samplesFile), which stays small enough to commit.
	Samples []backSample `json:"-"`
	// Note says where a result comes from when the report joins runs of
	// one schedule made at different times (written by hand; empty when
	// one run made every result).
	Note string `json:"note,omitempty"`
}

// chaosRun is the run in progress: one workload fleet, one side (plane
// and manager) per cache, one schedule played on all of them.
type chaosRun struct {
	chaosSetup
	cf       *chaosFleet
	workload []*fleet.APIServerProc
	sides    []*chaosSide
	t0       time.Time

	mu     sync.Mutex
	events []faultEvent
}

// runChaos plays the schedule on every cache at once: one fresh workload
// fleet, a management plane per cache.
func runChaos(ctx context.Context, s chaosSetup) ([]chaosResult, error) {
	a, err := fleet.StartAuthenticator()
	if err != nil {
		return nil, err
	}
	defer a.Close()
	dir, err := os.MkdirTemp("", "bench-chaos-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(dir)
	webhook, err := a.WebhookKubeconfig(dir)
	if err != nil {
		return nil, err
	}
	configure := func(_ int, env *envtest.Environment) {
		env.ControlPlane.GetAPIServer().Configure().
			Append("authentication-token-webhook-config-file", webhook).
			Append("authentication-token-webhook-version", "v1").
			Append("authentication-token-webhook-cache-ttl", fleet.WebhookCacheTTL.String())
	}
	fmt.Fprintf(os.Stderr, "bench-chaos: starting %d workload apiservers and %d management apiservers (%s), %d Clusters × %d Machines\n",
		s.o.APIServers, len(s.caches), strings.Join(s.caches, ", "), s.o.Cfg.Clusters, s.o.Machines)
	fleets, err := startPlaneFleets(ctx, s.root, s.o.APIServers, len(s.caches), configure)
	if err != nil {
		return nil, err
	}
	defer func() {
		for _, f := range fleets {
			f.Stop()
		}
	}()
	r := &chaosRun{chaosSetup: s}
	defer r.close()
	if err := r.prepare(ctx, fleets, a); err != nil {
		return nil, err
	}
	for _, p := range r.cf.planes {
		log, err := peerLog(p.cache)
		if err != nil {
			return nil, err
		}
		defer log.Close()
		r.sides = append(r.sides, newChaosSide(s.o, s.bin, p, r.cf, log))
	}
	return r.run(ctx)
}

// startPlaneFleets starts, at once, the workload fleet (k apiservers,
// configured) with the first plane's management apiserver, and one more
// management apiserver per further plane.
func startPlaneFleets(ctx context.Context, root string, k, planes int, configure func(int, *envtest.Environment)) ([]*fleet.Fleet, error) {
	fleets := make([]*fleet.Fleet, planes)
	errs := make([]error, planes)
	var wg sync.WaitGroup
	for i := range fleets {
		wg.Go(func() {
			if i == 0 {
				fleets[i], errs[i] = fleet.Start(ctx, root, 0, k, 0, configure)
			} else {
				fleets[i], errs[i] = fleet.Start(ctx, root, 0, 0, 0)
			}
		})
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		for _, f := range fleets {
			if f != nil {
				f.Stop()
			}
		}
		return nil, err
	}
	return fleets, nil
}

// prepare installs the CRDs on every plane, finds the apiserver
// processes and creates the Clusters (on every plane).
func (r *chaosRun) prepare(ctx context.Context, fleets []*fleet.Fleet, a *fleet.Authenticator) error {
	var planes []*chaosPlane
	for i, f := range fleets {
		if err := fleet.MHCObjects(ctx, f, r.capiDir, 0); err != nil { // the CRDs
			return err
		}
		if err := installMachineCRDs(ctx, f.Mgmt, r.capiDir); err != nil {
			return err
		}
		proc, err := fleet.FindAPIServer(f.Envs[0].Config)
		if err != nil {
			return err
		}
		planes = append(planes, &chaosPlane{cache: r.caches[i], index: i, mgmt: f.Mgmt, kubeconfig: f.Kubeconfig, proc: proc})
	}
	cf, err := newChaosFleet(fleets[0], planes, a, r.o.Machines)
	if err != nil {
		return err
	}
	r.cf = cf
	for _, cfg := range cf.Workload {
		p, err := fleet.FindAPIServer(cfg)
		if err != nil {
			return err
		}
		r.workload = append(r.workload, p)
	}
	errs := make(chan error, r.o.Cfg.Clusters)
	sem := make(chan struct{}, fleet.GrowWorkers)
	for i := range r.o.Cfg.Clusters {
		sem <- struct{}{}
		go func() {
			defer func() { <-sem }()
			errs <- cf.create(ctx, i, i%len(cf.Workload), 1)
		}()
	}
	for range r.o.Cfg.Clusters {
		if err := <-errs; err != nil {
			return err
		}
	}
	return nil
}

// close ends the managers and the processes the run started again.
func (r *chaosRun) close() {
	for _, s := range r.sides {
		s.peer.stop()
	}
	if r.cf != nil {
		for _, p := range r.cf.planes {
			p.proc.Close()
		}
		r.cf.closeProxies()
	}
	for _, p := range r.workload {
		p.Close()
	}
}

// run starts the managers, waits for every side to settle, takes the
// baselines, plays the schedule and judges each side.
func (r *chaosRun) run(ctx context.Context) ([]chaosResult, error) {
	defer func() {
		for _, s := range r.sides {
			s.finish()
		}
	}()
	for _, s := range r.sides {
		if err := s.peer.start(); err != nil {
			return nil, err
		}
	}
	pctx, stopPoking := context.WithCancel(ctx)
	defer stopPoking()
	go r.poke(pctx)
	start := time.Now()
	live := r.cf.live()
	for _, s := range r.sides {
		s.trace.await(append(live, r.cf.machinesOf(live)...), start)
	}
	if err := r.waitSettled(ctx, start); err != nil {
		return nil, fmt.Errorf("before the first fault: %w", err)
	}
	sleepCtx(ctx, r.o.Steady)
	if err := onAll(ctx, r.sides, func(ctx context.Context, s *chaosSide) error { return s.baseline(ctx, r.o.PProfDir) }); err != nil {
		return nil, err
	}
	r.t0 = time.Now()
	for _, s := range r.sides {
		s.trace.setT0(r.t0)
	}
	r.play(ctx)
	fmt.Fprintf(os.Stderr, "bench-chaos: every fault ended after %s; judging\n", time.Since(r.t0).Round(time.Second))
	restoreErr := r.cf.restore(ctx, r.o.Cfg.Clusters, minRecreateGap)
	restored := time.Now()
	results := make([]chaosResult, len(r.sides))
	onAll(ctx, r.sides, func(ctx context.Context, s *chaosSide) error {
		results[s.plane.index] = r.judge(ctx, s, restored, restoreErr)
		return nil
	})
	return results, ctx.Err()
}

// waitSettled waits (up to the warmup bound from start) until every side
// has every live Cluster connected and none waiting for a reconcile, and
// records when each side got there.
func (r *chaosRun) waitSettled(ctx context.Context, start time.Time) error {
	deadline := start.Add(r.o.Warmup)
	done := make([]bool, len(r.sides))
	for {
		live, left := r.cf.live(), 0
		for i, s := range r.sides {
			if !done[i] && s.settled(live) {
				done[i], s.warmup = true, time.Since(start).Seconds()
				fmt.Fprintf(os.Stderr, "bench-chaos: %s: every Cluster connected and reconciled after %.1f s\n", s.cache, s.warmup)
			}
			if !done[i] {
				left++
			}
		}
		if left == 0 {
			return nil
		}
		if time.Now().After(deadline) {
			return r.notSettled(live, done)
		}
		if !sleepCtx(ctx, 250*time.Millisecond) {
			return ctx.Err()
		}
	}
}

// notSettled says, per side not done, what is not connected or not
// reconciled.
func (r *chaosRun) notSettled(live []string, done []bool) error {
	var errs []error
	for i, s := range r.sides {
		if done[i] {
			continue
		}
		down, _ := s.trace.notConnected(live)
		waiting := s.trace.waiting()
		errs = append(errs, fmt.Errorf("%s: after %s: %d of %d Clusters not connected (%v), %d not reconciled (%v)",
			s.cache, r.o.Warmup, len(down), len(live), down, len(waiting), waiting))
	}
	return errors.Join(errs...)
}

// poke pokes, every pokeEvery until ctx ends, what waits for a reconcile
// on each side (and starts a crashed manager again).
func (r *chaosRun) poke(ctx context.Context) {
	t := time.NewTicker(pokeEvery)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		onAll(ctx, r.sides, func(ctx context.Context, s *chaosSide) error { s.pokeWaiting(ctx); return nil })
	}
}

// record adds an applied fault, and makes every side wait for a
// successful reconcile of the MachineHealthCheck and each Machine of its
// clusters since its end (poke pokes them until then).
func (r *chaosRun) record(e faultEvent) {
	end := r.t0.Add(time.Duration(e.End * float64(time.Second)))
	for _, s := range r.sides {
		s.trace.await(append(r.cf.machinesOf(e.Clusters), e.Clusters...), end)
	}
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
