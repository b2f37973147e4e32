package chaos

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"time"

	"github.com/clusterpool/clusterpool/bench/peers/driver/internal/fleet"
	"github.com/clusterpool/clusterpool/bench/peers/protocol"
	"github.com/clusterpool/clusterpool/breaker"
)

// Options are the command line of the chaos run (make chaos, make
// chaos-short): Cluster API v1.14.2's MachineHealthCheck and Machine
// reconcilers (bench/peers/capi -chaos), one manager per ClusterCache, all
// at once on one workload fleet, each with a management plane of its own,
// under one seeded schedule of overlapping faults applied to all of them
// at the same instant.
type Options struct {
	*fleet.Shared `json:"-"`
	On            bool          `json:"-"`
	Short         bool          `json:"short"`
	Seed          uint64        `json:"seed"`
	Duration      time.Duration `json:"duration_ns"`
	Caches        []string      `json:"caches"`
	Machines      int           `json:"machines_per_cluster"`
	// Warmup bounds the wait for every Cluster connected and reconciled
	// before the baseline; Settle is how long after the last fault every
	// live Cluster has to be connected (and deleted ones gone).
	Warmup time.Duration `json:"warmup_ns"`
	Settle time.Duration `json:"settle_ns"`
	// Steady: from then until the baseline (the process settles).
	Steady time.Duration `json:"steady_ns"`
	From   string        `json:"-"`
	Gates  string        `json:"feature_gates,omitempty"`
	// Race: the peer is built with -race. PProfDir: where the peer's
	// goroutine and heap profiles at the baseline and the end are saved.
	Race     bool   `json:"race,omitempty"`
	PProfDir string `json:"-"`
}

// Register defines the chaos run's flags on fs; the Options it returns
// read the shared ones from sh. CHAOS_SEED and CHAOS_DURATION set the
// defaults of -chaos-seed and -chaos-duration.
func Register(fs *flag.FlagSet, sh *fleet.Shared) *Options {
	co := &Options{Shared: sh}
	seed, dur := uint64(1), 60*time.Minute
	if v, err := strconv.ParseUint(os.Getenv("CHAOS_SEED"), 10, 64); err == nil {
		seed = v
	}
	if v, err := time.ParseDuration(os.Getenv("CHAOS_DURATION")); err == nil {
		dur = v
	}
	fs.BoolVar(&co.On, "chaos", false, "chaos run (make chaos): overlapping faults on the MachineHealthCheck fleet, the drop-in and the stock ClusterCache at once on one workload fleet; tables per fault class, where the drop-in is behind, and the stuck, leaked, crossed and hung verdicts")
	fs.BoolVar(&co.Short, "chaos-short", false, "the CI chaos run (make chaos-short): 3 minutes, seed 1 (or -chaos-seed, $CHAOS_SEED), the drop-in only (unless -chaos-caches), 30 Clusters on 3 apiservers; exits non-zero if anything of the drop-in's is stuck, leaked, crossed, hung or cut off")
	fs.Uint64Var(&co.Seed, "chaos-seed", seed, "chaos run: the schedule's seed (default $CHAOS_SEED or 1)")
	fs.DurationVar(&co.Duration, "chaos-duration", dur, "chaos run: how long faults start (default $CHAOS_DURATION or 60m)")
	fs.IntVar(&co.Machines, "chaos-machines", 3, "chaos run: Machines (and Nodes) per Cluster")
	fs.DurationVar(&co.Warmup, "chaos-warmup", 5*time.Minute, "chaos run: bound of the wait for every Cluster connected and reconciled before the first fault")
	fs.DurationVar(&co.Settle, "chaos-settle", 60*time.Second, "chaos run: after the last fault, every live Cluster must be connected within this")
	fs.DurationVar(&co.Steady, "chaos-steady", 30*time.Second, "chaos run: from every Cluster connected and reconciled until the baseline")
	fs.StringVar(&co.Gates, "chaos-feature-gates", "", "chaos run: Cluster API feature gates of the peer")
	fs.BoolVar(&co.Race, "chaos-race", false, "chaos run: the Cluster API peer built with -race (GORACE=halt_on_error=1: a data race ends the manager, which counts as a crash)")
	fs.StringVar(&co.PProfDir, "chaos-pprof", "", "chaos run: save the manager's goroutine (debug=1) and heap profiles at the baseline and at the end in this directory, as <cache>-{baseline,end}-{goroutines.txt,heap.pb.gz}")
	fs.Func("chaos-from", "run nothing: print the -json file of a chaos run again", func(v string) error {
		co.On, co.From = true, v
		return nil
	})
	fs.Func("chaos-caches", "chaos run: ClusterCaches to run side by side (default adapter,stock; -chaos-short: adapter)", fleet.CachesFlag(&co.Caches))
	return co
}

// Defaults applies -chaos-short and the chaos run's fleet defaults
// (100 Clusters on 4 apiservers unless -clusters or -apiservers say).
// -chaos-short fixes everything but the seed, which is -chaos-seed's
// (default $CHAOS_SEED or 1, Register): CI's run is seed 1, and another
// seed's short run is one variable away; and the caches, the drop-in only
// unless -chaos-caches says (CI's run gates the drop-in: a second manager
// and management apiserver would add their load to its figures for a
// comparison CI does not judge).
func (o *Options) Defaults(fs *flag.FlagSet) error {
	co := o
	if co.Short {
		co.On, co.Duration, co.Machines = true, 3*time.Minute, 2
		o.Cfg.Clusters, o.APIServers = 30, 3
		if !fleet.FlagGiven(fs, "chaos-caches") {
			co.Caches = []string{"adapter"}
		}
	}
	if !co.On {
		return nil
	}
	if !co.Short && !fleet.FlagGiven(fs, "clusters") {
		o.Cfg.Clusters = 100
	}
	if !co.Short && !fleet.FlagGiven(fs, "apiservers") {
		o.APIServers = 4
	}
	if len(co.Caches) == 0 {
		co.Caches = []string{"adapter", "stock"}
	}
	return co.validate()
}

// validate checks the chaos run's options once their defaults are in.
func (co *Options) validate() error {
	if co.Duration <= 0 || co.Machines < 1 || co.Warmup <= 0 || co.Settle <= 0 || co.Steady < 0 {
		return errors.New("-chaos: want a positive -chaos-duration, -chaos-warmup, -chaos-settle and -chaos-machines")
	}
	if sorted := slices.Sorted(slices.Values(co.Caches)); len(slices.Compact(sorted)) != len(co.Caches) {
		return fmt.Errorf("-chaos-caches %v: each cache once", co.Caches)
	}
	if co.Short && !slices.Contains(co.Caches, "adapter") {
		return fmt.Errorf("-chaos-short gates the drop-in: -chaos-caches %v lacks adapter", co.Caches)
	}
	return nil
}

// Timings the bounds derive from. The drop-in's: breaker's longest open
// period and clusterapi/clustercache's ProbeInterval (10 s; another
// module). The stock ClusterCache's (v1.14.2 defaults): a connected
// cluster is dropped after 5 failed probes 10 s apart (5 s timeout), a
// failed connect retried after 30 s. Both: the MachineHealthCheck
// reconciler's rate limit (15 s, ReconcilerRateLimiting) and the driver's
// poke of the MachineHealthChecks waiting for a reconcile.
const (
	dropInProbeInterval  = 10 * time.Second
	stockProbeInterval   = 10 * time.Second
	stockProbeFailures   = 5
	stockRetryInterval   = 30 * time.Second
	reconcileRateLimit   = 15 * time.Second
	pokeEvery            = 5 * time.Second
	measurementLatency   = reconcileRateLimit + pokeEvery
	chaosHungAfter       = 15 * time.Second // Client.Timeout (10 s) + 5 s
	chaosSampleEvery     = time.Second
	chaosBaselineSamples = 3
)

// chaosBound is a cache's stated bound on time back, with how it is
// derived; and the bound after a management-apiserver restart, which
// breaks the manager's own watches (the same for both caches: client-go's
// reflectors, not the cache, decide when they resume).
type chaosBound struct {
	Seconds     float64 `json:"seconds"`
	Derived     string  `json:"derived"`
	Mgmt        float64 `json:"mgmt_restart_seconds"`
	MgmtDerived string  `json:"mgmt_restart_derived"`
}

// For is the bound of a sample freed by a fault of class freedBy.
func (b chaosBound) For(freedBy string) float64 {
	if freedBy == faultMgmtRestart && b.Mgmt > 0 {
		return b.Mgmt
	}
	return b.Seconds
}

// client-go's Reflector (tools/cache/reflector.go, v0.36.3) retries a
// refused watch after a backoff of 800 ms doubling to a cap of 30 s,
// jittered by up to 100 % (so up to 60 s), reset only 2 min after its
// last reset (not after its last failure): a management restart less than
// 2 min after another finds the manager's reflectors near the cap.
// reflectorWaits are the waits a reflector can take after the apiserver
// is back: the one in progress, and one more when the resumed watch is
// refused as too old (410: ListAndWatch returns, and the loop around it
// waits again before it lists). Measured with controller-runtime v0.24.1 on
// a real apiserver (outages of 17 s, then 11 s 49 s later): an informer
// resumed 56-86 s after the second came back, every time after a 410.
const (
	reflectorMaxWait = 60 * time.Second
	reflectorWaits   = 2
)

// cacheTitle names cache ("adapter" or "stock", the flag's and the JSON's
// names) for the report.
func cacheTitle(cache string) string {
	switch cache {
	case "adapter":
		return "clusterpool's drop-in"
	case "stock":
		return "Cluster API v1.14.2's ClusterCache"
	}
	return cache
}

// boundFor states cache's bounds.
func boundFor(cache string) chaosBound {
	m := reflectorWaits*reflectorMaxWait + measurementLatency
	b := chaosBound{Mgmt: m.Seconds(), MgmtDerived: fmt.Sprintf("%d of client-go's reflector waits at its cap, %s each (30 s, jittered by up to 100 %%) + the reconciler's rate limit %s + the poke period %s",
		reflectorWaits, reflectorMaxWait, reconcileRateLimit, pokeEvery)}
	if cache == "adapter" {
		d := breaker.DefaultMaxOpenTimeout + 2*dropInProbeInterval + measurementLatency
		b.Seconds, b.Derived = d.Seconds(), fmt.Sprintf("longest open period %s + 2 probe intervals of %s + the reconciler's rate limit %s + the poke period %s",
			breaker.DefaultMaxOpenTimeout, dropInProbeInterval, reconcileRateLimit, pokeEvery)
		return b
	}
	d := stockProbeFailures*stockProbeInterval + stockRetryInterval + measurementLatency
	b.Seconds, b.Derived = d.Seconds(), fmt.Sprintf("%d failed probes %s apart + the connect retry %s + the reconciler's rate limit %s + the poke period %s",
		stockProbeFailures, stockProbeInterval, stockRetryInterval, reconcileRateLimit, pokeEvery)
	return b
}

// chaosReport is the -json output of a chaos run.
type chaosReport struct {
	fleet.Stamp
	Clusters   int           `json:"clusters"`
	APIServers int           `json:"workload_apiservers"`
	Options    Options       `json:"options"`
	Schedule   []fault       `json:"schedule"`
	Results    []chaosResult `json:"results"`
	// Behind: where the drop-in is behind the stock cache (behindOf; empty
	// unless both ran).
	Behind []behindRow `json:"behind,omitempty"`
	Wall   float64     `json:"wall_s"`
}

// Run is the -chaos run, or with -chaos-from its report printed again.
func Run(ctx context.Context, o *Options) error {
	co, root, out := *o, o.Root, o.Out
	if co.From != "" {
		var rep chaosReport
		if err := protocol.ReadReport(co.From, &rep); err != nil {
			return err
		}
		return writeChaos(out, rep)
	}
	bin, capiDir, err := fleet.CAPIPeer(ctx, root)
	if err == nil && co.Race {
		bin, err = raceBuild(ctx, root, bin)
		fmt.Fprintf(os.Stderr, "bench-chaos: the manager is %s (-race, GORACE=halt_on_error=1)\n", bin)
	}
	if err == nil && co.PProfDir != "" {
		err = os.MkdirAll(co.PProfDir, 0o755)
	}
	if err != nil {
		return err
	}
	start := time.Now()
	rep := chaosReport{Stamp: fleet.NewStamp(start), Clusters: o.Cfg.Clusters, APIServers: o.APIServers,
		Options: co, Schedule: chaosSchedule(co.Seed, o.Cfg.Clusters, o.APIServers, co.Duration)}
	for _, cache := range co.Caches {
		b := boundFor(cache)
		fmt.Fprintf(os.Stderr, "bench-chaos: %s, %d faults over %s (seed %d); bound on time back %.0f s: %s; after a management restart %.0f s: %s\n",
			cacheTitle(cache), len(rep.Schedule), co.Duration, co.Seed, b.Seconds, b.Derived, b.Mgmt, b.MgmtDerived)
	}
	res, err := runChaos(ctx, chaosSetup{o: o, root: root, bin: bin, capiDir: capiDir, caches: co.Caches, schedule: rep.Schedule})
	if err == nil {
		err = ctx.Err() // interrupted: the run is not whole
	}
	if err != nil {
		return err
	}
	rep.Results = res
	rep.Behind, _ = behindOf(res)
	rep.Wall = time.Since(start).Seconds()
	if err := writeChaos(out, rep); err != nil {
		return err
	}
	if err := fleet.WriteJSONAs(o.JSONOut, rep, false); err != nil {
		return err
	}
	if err := fleet.WriteJSONAs(samplesFile(o.JSONOut), samplesOf(res), false); err != nil {
		return err
	}
	if co.Short {
		return shortVerdict(rep)
	}
	return nil
}

// raceBuild builds the capi peer with -race beside bin (its build without),
// as hack/build-tool.sh builds every peer, and returns its path.
func raceBuild(ctx context.Context, root, bin string) (string, error) {
	out := bin + "-race"
	cmd := exec.CommandContext(ctx, "bash", filepath.Join(root, "hack/build-tool.sh"), out, "bench/peers/capi", ".", "-race")
	cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
	if err := cmd.Run(); err != nil {
		return "", fmt.Errorf("building the capi peer with -race: %w", err)
	}
	return out, nil
}

// shortVerdict fails if the drop-in has anything stuck, leaked, crossed,
// hung or cut off (what load cannot bend; time back is not judged). The stock
// cache's verdicts, when it ran beside it, are reported, not judged.
func shortVerdict(rep chaosReport) error {
	var errs []error
	for _, r := range rep.Results {
		if r.Cache != "adapter" {
			continue
		}
		for _, v := range r.Verdicts.violations() {
			errs = append(errs, fmt.Errorf("%s: %s", r.Cache, v))
		}
	}
	if len(errs) > 0 {
		return fmt.Errorf("chaos-short: %w", errors.Join(errs...))
	}
	return nil
}
