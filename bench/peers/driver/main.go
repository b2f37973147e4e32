package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/go-logr/logr"
	"github.com/go-logr/logr/funcr"
	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/clusterpool/clusterpool/bench/peers/driver/internal/fleet"
)

// options are the command line.
type options struct {
	cfg        fleet.Config
	t          fleet.Timing
	apiservers int
	strategies []string
	run        *regexp.Regexp
	scale      float64
	jsonOut    string
	modelFrom  string
	smoke      bool
	scaleRun   scaleOptions
	scaleFrom  string
	rotation   rotationOptions
	mhc        mhcOptions
	chaos      chaosOptions
	ba         beforeAfterOptions
}

// report is the JSON written with -json (read by bench/plot).
type report struct {
	Date       string       `json:"date"`
	Machine    string       `json:"machine"`
	Config     fleet.Config `json:"config"`
	APIServers int          `json:"workload_apiservers"`
	Results    []result     `json:"results"`
	Model      []comparison `json:"model"`
	ModelScale float64      `json:"model_scale"`
}

func main() {
	if os.Getenv(proxyHostEnv) != "" { // a scale run's proxy host (scale_proxyhost.go)
		os.Exit(serveProxyHost(os.Stdin, os.Stdout))
	}
	// envtest and the controller-runtime client log through
	// controller-runtime's logger: without one set it prints a
	// "log.SetLogger(...) was never called" stack dump.
	log := logr.Discard()
	if os.Getenv("PEER_LOG") != "" {
		log = funcr.New(func(prefix, args string) { fmt.Fprintln(os.Stderr, prefix, args) }, funcr.Options{})
	}
	ctrllog.SetLogger(log)
	o, err := parseFlags(os.Args[1:])
	if err == nil {
		ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
		err = run(ctx, o, os.Stdout)
		stop()
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "bench-peers:", err)
		os.Exit(1)
	}
}

func parseFlags(args []string) (options, error) {
	var o options
	var strategies, runExpr string
	fs := flag.NewFlagSet("driver", flag.ContinueOnError)
	fs.IntVar(&o.cfg.Clusters, "clusters", 40, "Cluster objects (M)")
	fs.IntVar(&o.apiservers, "apiservers", 3, "workload apiservers (K)")
	fs.IntVar(&o.cfg.Objects, "objects", 20, "objects per cluster (N)")
	fs.IntVar(&o.cfg.Workers, "workers", 10, "workload controller's MaxConcurrentReconciles")
	fs.DurationVar(&o.cfg.Work, "work", 100*time.Millisecond, "least time a successful reconcile holds its worker (bench/sim's Work)")
	fs.DurationVar(&o.cfg.Bucket, "bucket", 5*time.Second, "time series bucket")
	fs.Uint64Var(&o.cfg.Seed, "seed", 1, "fault layout seed")
	fs.Float64Var(&o.t.Fraction, "fraction", 0.2, "fraction of dead, recovering or flapping clusters")
	fs.DurationVar(&o.t.Herd, "herd", 150*time.Second, "bound of the herd run")
	fs.DurationVar(&o.t.Dead, "dead", 60*time.Second, "length of the dead run")
	fs.DurationVar(&o.t.RecoverAt, "recover-at", 20*time.Second, "earliest recovery")
	fs.DurationVar(&o.t.RecoverSpread, "recover-spread", time.Minute, "recoveries are spread over this (bench/sim's RecoverSpread)")
	fs.DurationVar(&o.t.RecoverAfter, "recover-after", 90*time.Second, "bound of the recovery run after the last recovery")
	fs.DurationVar(&o.t.Flap, "flap", 90*time.Second, "length of the flapping run")
	fs.DurationVar(&o.t.FlapPeriod, "flap-period", 30*time.Second, "flapping clusters' up and down period")
	fs.StringVar(&strategies, "strategies", "cct,clustercache,clusterpool", "peers to run, in order")
	fs.StringVar(&runExpr, "run", ".", "regexp of the scenarios to run (herd, dead, recovery, flapping)")
	fs.Float64Var(&o.scale, "model-scale", 0.1, "time scale of the bench/sim model runs (0.01 overshoots 100 ms of work by ≈ 20 %, 0.1 by ≈ 5 %)")
	fs.StringVar(&o.modelFrom, "model-from", "", "run no peer: redo the model check against the real results in this -json file")
	fs.StringVar(&o.jsonOut, "json", "", "write every figure, series and the model check to this file")
	fs.BoolVar(&o.cfg.Timings, "timings", false, "the peers time their reconciles' phases and client-go's requests; printed after the real table")
	sizes := scaleFlags(fs, &o.scaleRun)
	rotationFlags(fs, &o.rotation)
	mhcFlags(fs, &o.mhc)
	chaosFlags(fs, &o.chaos)
	beforeAfterFlags(fs, &o.ba)
	fs.StringVar(&o.scaleFrom, "scale-from", "", "run no peer: redo the fits and tables of a scale run's -json file")
	fs.BoolVar(&o.smoke, "smoke", false, "the make test smoke: 4 clusters on 1 apiserver, 3 objects, the dead scenario for 10 s; fails unless every peer reconciled")
	if err := fs.Parse(args); err != nil {
		return o, err
	}
	if o.smoke {
		o.cfg.Clusters, o.apiservers, o.cfg.Objects, o.t.Fraction, o.t.Dead, runExpr = 4, 1, 3, 0.25, 10*time.Second, "^dead$"
	}
	o.strategies = strings.Split(strategies, ",")
	var err error
	if err := o.scaleStrategies(fs, *sizes); err != nil {
		return o, err
	}
	if err := o.rotation.defaults(fs, &o.strategies); err != nil {
		return o, err
	}
	if err := o.chaosDefaults(fs); err != nil {
		return o, err
	}
	if err := o.mhc.defaults(); err != nil {
		return o, err
	}
	if o.run, err = regexp.Compile(runExpr); err != nil {
		return o, fmt.Errorf("-run: %w", err)
	}
	if o.cfg.Clusters < 1 || o.apiservers < 1 || o.cfg.Objects < 1 || o.cfg.Workers < 1 {
		return o, errors.New("-clusters, -apiservers, -objects and -workers must be positive")
	}
	return o, nil
}

func run(ctx context.Context, o options, out io.Writer) error {
	root, err := fleet.RepoRoot()
	if err != nil {
		return err
	}
	if mode := o.managerMode(); mode != nil {
		return mode(ctx, o, root, out)
	}
	bins, err := buildPeers(ctx, root, o)
	if err != nil {
		return err
	}
	if len(o.scaleRun.Sizes) > 0 {
		return runScale(ctx, o, bins, root, out)
	}
	if o.rotation.On {
		return runRotation(ctx, o, bins, root, out)
	}
	start := time.Now()
	fmt.Fprintf(os.Stderr, "bench-peers: starting %d apiservers, %d Clusters × %d objects\n", 1+o.apiservers, o.cfg.Clusters, o.cfg.Objects)
	f, err := fleet.Start(ctx, root, o.cfg.Clusters, o.apiservers, o.cfg.Objects)
	if err != nil {
		return err
	}
	defer f.Stop()
	rep := report{Date: start.UTC().Format(time.RFC3339), Machine: fleet.Machine(), Config: o.cfg, APIServers: o.apiservers, ModelScale: o.scale}
	ran, err := runScenarios(ctx, f, bins, o, &rep)
	if err != nil {
		return err
	}
	fmt.Fprintf(out, "Real peers on one fleet: %d Clusters (%d workload apiservers) × %d objects, %d workers, %s of work per reconcile; %s wall\n\n",
		o.cfg.Clusters, o.apiservers, o.cfg.Objects, o.cfg.Workers, o.cfg.Work, time.Since(start).Round(time.Second))
	if err := writeReal(out, rep.Results); err != nil {
		return err
	}
	if err := writeTimings(out, rep.Results); err != nil {
		return err
	}
	if err := modelCheck(ctx, o, ran, &rep, out); err != nil {
		return err
	}
	if err := fleet.WriteJSON(o.jsonOut, rep); err != nil {
		return err
	}
	if o.smoke {
		return smokeCheck(rep.Results, len(o.strategies))
	}
	return nil
}

// managerMode is the run o asks for that builds no workload peer (the
// model check or scale tables of a file, the MachineHealthCheck and
// chaos runs), or nil.
func (o options) managerMode() func(context.Context, options, string, io.Writer) error {
	switch {
	case o.modelFrom != "":
		return func(ctx context.Context, o options, _ string, out io.Writer) error { return remodel(ctx, o, out) }
	case o.scaleFrom != "":
		return func(_ context.Context, o options, _ string, out io.Writer) error { return rescale(o, out) }
	case o.mhc.On:
		return runMHC
	case o.chaos.On:
		return runChaosMode
	case o.ba.Dir != "":
		return runBeforeAfter
	}
	return nil
}

// runScenarios runs every strategy of o on every scenario -run selects,
// adding the results to rep, and returns the scenarios it ran.
func runScenarios(ctx context.Context, f *fleet.Fleet, bins map[string]string, o options, rep *report) ([]fleet.Scenario, error) {
	var ran []fleet.Scenario
	for _, sc := range fleet.Scenarios(o.t) {
		if !o.run.MatchString(sc.Name) {
			continue
		}
		ran = append(ran, sc)
		l := sc.Lay(o.cfg.Clusters, o.cfg.Seed)
		for _, s := range o.strategies {
			fmt.Fprintf(os.Stderr, "bench-peers: %s on %s (≤ %s)\n", s, sc.Name, sc.Duration)
			res, err := runPeer(ctx, f, bins[s], s, sc, l, o.cfg)
			if err != nil {
				return nil, err
			}
			rep.Results = append(rep.Results, res)
		}
	}
	return ran, nil
}

// buildPeers builds o's strategies (the -peer ones are given) and returns
// their binaries by name.
func buildPeers(ctx context.Context, root string, o options) (map[string]string, error) {
	bins := map[string]string{}
	for _, s := range o.strategies {
		if bin, ok := o.scaleRun.Extra[s]; ok {
			bins[s] = bin
			continue
		}
		bin, err := fleet.BuildPeer(ctx, root, s)
		if err != nil {
			return nil, err
		}
		bins[s] = bin
	}
	return bins, nil
}

// modelCheck runs bench/sim on every scenario of rep's results and prints
// model against real.
func modelCheck(ctx context.Context, o options, ran []fleet.Scenario, rep *report, out io.Writer) error {
	rep.Model, rep.ModelScale = nil, o.scale
	for _, sc := range ran {
		for _, r := range rep.Results {
			if r.Scenario != sc.Name || !hasModel(r.Strategy) {
				continue
			}
			m, err := runModel(ctx, sc, r.Strategy, rep.Config, o.scale)
			if err != nil {
				return err
			}
			rep.Model = append(rep.Model, compare(m, r)...)
		}
	}
	fmt.Fprintf(out, "\nModel (bench/sim, scale %g) against real, same fleet size and timings:\n\n", o.scale)
	return writeModel(out, rep.Model)
}

// remodel redoes the model check of a -json file's real results (the
// scenarios' timings come from the flags, as when it was written).
func remodel(ctx context.Context, o options, out io.Writer) error {
	var rep report
	if err := fleet.ReadJSON(o.modelFrom, &rep); err != nil {
		return err
	}
	var ran []fleet.Scenario
	for _, sc := range fleet.Scenarios(o.t) {
		if o.run.MatchString(sc.Name) {
			ran = append(ran, sc)
		}
	}
	fmt.Fprintf(out, "Real peers on one fleet (%s, %s): %d Clusters (%d workload apiservers) × %d objects, %d workers, %s of work per reconcile\n\n",
		rep.Date, rep.Machine, rep.Config.Clusters, rep.APIServers, rep.Config.Objects, rep.Config.Workers, rep.Config.Work)
	if err := writeReal(out, rep.Results); err != nil {
		return err
	}
	if err := modelCheck(ctx, o, ran, &rep, out); err != nil {
		return err
	}
	return fleet.WriteJSON(o.jsonOut, rep)
}

// smokeCheck fails unless every peer ran and reconciled healthy objects,
// and the proxies counted its connections.
func smokeCheck(results []result, want int) error {
	if len(results) != want {
		return fmt.Errorf("smoke: %d results, want %d", len(results), want)
	}
	for _, r := range results {
		if r.Figures.HealthyPerSec <= 0 || r.Dials == 0 || r.Figures.Reconciles == 0 {
			return fmt.Errorf("smoke: %s reconciled nothing (healthy/s %.2f, reconciles %d, dials %d)",
				r.Strategy, r.Figures.HealthyPerSec, r.Figures.Reconciles, r.Dials)
		}
	}
	return nil
}

// scaleFlags defines the flags of scale runs on fs, into so; it returns
// -scale's value, which parseFlags hands to scaleStrategies.
func scaleFlags(fs *flag.FlagSet, so *scaleOptions) *string {
	sizes := fs.String("scale", "", "scale run (make bench-scale): comma-separated fleet sizes, e.g. 100,300,1000; every peer connects all clusters, then idles")
	fs.DurationVar(&so.Idle, "idle", time.Minute, "scale run: each peer's idle window once connected")
	fs.DurationVar(&so.Baseline, "baseline", 20*time.Second, "scale run: window measuring the apiservers' own requests, no peer running")
	fs.DurationVar(&so.Connect, "connect", 5*time.Minute, "scale run: bound of the time until every cluster is connected")
	fs.IntVar(&so.CCTMax, "cct-max", 100, "scale run: run CCT v1.8.4 only on fleets up to this size")
	phaseFlags(fs, so) // scale_flags.go
	fs.Func("peer", "NAME=BINARY: one more peer speaking the workload protocol, not built (the Cluster API drop-in's hook, another tree's clusterpool); repeatable; no model check", fleet.BinFlag(&so.Extra))
	return sizes
}

// scaleStrategies reads -scale's sizes; a scale run without -strategies
// runs the floor and every peer. The -peer programs are added.
func (o *options) scaleStrategies(fs *flag.FlagSet, sizes string) error {
	var err error
	if o.scaleRun.Sizes, err = parseSizes(sizes); err != nil {
		return err
	}
	if len(o.scaleRun.Sizes) > 0 && !fleet.FlagGiven(fs, "strategies") {
		o.strategies = []string{"floor", "clusterpool", "clustercache", "cct"}
	}
	for name := range o.scaleRun.Extra {
		o.strategies = append(o.strategies, name)
	}
	return nil
}

// parseSizes reads -scale: ascending positive fleet sizes.
func parseSizes(s string) ([]int, error) {
	if s == "" {
		return nil, nil
	}
	var sizes []int
	for item := range strings.SplitSeq(s, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(item))
		if err != nil || n < 1 || (len(sizes) > 0 && n <= sizes[len(sizes)-1]) {
			return nil, fmt.Errorf("-scale %q: want ascending positive sizes", s)
		}
		sizes = append(sizes, n)
	}
	return sizes, nil
}
