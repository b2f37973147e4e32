package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"regexp"
	"syscall"
	"time"

	"github.com/go-logr/logr"
	"github.com/go-logr/logr/funcr"
	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/clusterpool/clusterpool/bench/peers/driver/internal/chaos"
	"github.com/clusterpool/clusterpool/bench/peers/driver/internal/fleet"
	"github.com/clusterpool/clusterpool/bench/peers/driver/internal/mhc"
	"github.com/clusterpool/clusterpool/bench/peers/driver/internal/rotation"
	"github.com/clusterpool/clusterpool/bench/peers/driver/internal/scale"
)

// options are the command line.
type options struct {
	*fleet.Shared
	run       *regexp.Regexp
	scale     float64
	modelFrom string
	smoke     bool
	scaleRun  *scale.Options
	rotation  *rotation.Options
	mhc       *mhc.Options
	chaos     *chaos.Options
	ba        beforeAfterOptions
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
	if os.Getenv(scale.ProxyHostEnv) != "" { // a scale run's proxy host (internal/scale/proxyhost.go)
		os.Exit(scale.ServeProxyHost(os.Stdin, os.Stdout))
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
	var runExpr string
	fs := flag.NewFlagSet("driver", flag.ContinueOnError)
	o.Shared = fleet.Flags(fs)
	fs.StringVar(&runExpr, "run", ".", "regexp of the scenarios to run (herd, dead, recovery, flapping)")
	fs.Float64Var(&o.scale, "model-scale", 0.1, "time scale of the bench/sim model runs (0.01 overshoots 100 ms of work by ≈ 20 %, 0.1 by ≈ 5 %)")
	fs.StringVar(&o.modelFrom, "model-from", "", "run no peer: redo the model check against the real results in this -json file")
	o.scaleRun = scale.Register(fs, o.Shared)
	o.rotation = rotation.Register(fs, o.Shared)
	o.mhc = mhc.Register(fs, o.Shared)
	o.chaos = chaos.Register(fs, o.Shared)
	beforeAfterFlags(fs, &o.ba)
	fs.BoolVar(&o.smoke, "smoke", false, "the make test smoke: 4 clusters on 1 apiserver, 3 objects, the dead scenario for 10 s; fails unless every peer reconciled")
	if err := fs.Parse(args); err != nil {
		return o, err
	}
	if o.smoke {
		o.Cfg.Clusters, o.APIServers, o.Cfg.Objects, o.Timing.Fraction, o.Timing.Dead, runExpr = 4, 1, 3, 0.25, 10*time.Second, "^dead$"
	}
	o.SplitStrategies()
	var err error
	if err := o.scaleRun.Defaults(fs); err != nil {
		return o, err
	}
	o.AddExtra()
	if err := o.rotation.Defaults(fs); err != nil {
		return o, err
	}
	if err := o.chaos.Defaults(fs); err != nil {
		return o, err
	}
	if err := o.mhc.Defaults(); err != nil {
		return o, err
	}
	if o.run, err = regexp.Compile(runExpr); err != nil {
		return o, fmt.Errorf("-run: %w", err)
	}
	return o, o.Validate()
}

func run(ctx context.Context, o options, out io.Writer) error {
	root, err := fleet.RepoRoot()
	if err != nil {
		return err
	}
	o.Root, o.Out = root, out
	if mode := o.managerMode(); mode != nil {
		return mode(ctx, o, root, out)
	}
	if o.scaleRun.On() {
		return scale.Run(ctx, o.scaleRun)
	}
	if o.rotation.On() {
		return rotation.Run(ctx, o.rotation)
	}
	bins, err := fleet.BuildPeers(ctx, o.Shared)
	if err != nil {
		return err
	}
	start := time.Now()
	fmt.Fprintf(os.Stderr, "bench-peers: starting %d apiservers, %d Clusters × %d objects\n", 1+o.APIServers, o.Cfg.Clusters, o.Cfg.Objects)
	f, err := fleet.Start(ctx, root, o.Cfg.Clusters, o.APIServers, o.Cfg.Objects)
	if err != nil {
		return err
	}
	defer f.Stop()
	rep := report{Date: start.UTC().Format(time.RFC3339), Machine: fleet.Machine(), Config: o.Cfg, APIServers: o.APIServers, ModelScale: o.scale}
	ran, err := runScenarios(ctx, f, bins, o, &rep)
	if err != nil {
		return err
	}
	fmt.Fprintf(out, "Real peers on one fleet: %d Clusters (%d workload apiservers) × %d objects, %d workers, %s of work per reconcile; %s wall\n\n",
		o.Cfg.Clusters, o.APIServers, o.Cfg.Objects, o.Cfg.Workers, o.Cfg.Work, time.Since(start).Round(time.Second))
	if err := writeReal(out, rep.Results); err != nil {
		return err
	}
	if err := writeTimings(out, rep.Results); err != nil {
		return err
	}
	if err := modelCheck(ctx, o, ran, &rep, out); err != nil {
		return err
	}
	if err := fleet.WriteJSON(o.JSONOut, rep); err != nil {
		return err
	}
	if o.smoke {
		return smokeCheck(rep.Results, len(o.Strategies))
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
	case o.scaleRun.From != "":
		return func(ctx context.Context, o options, _ string, _ io.Writer) error { return scale.Run(ctx, o.scaleRun) }
	case o.mhc.On:
		return func(ctx context.Context, o options, _ string, _ io.Writer) error { return mhc.Run(ctx, o.mhc) }
	case o.chaos.On:
		return func(ctx context.Context, o options, _ string, _ io.Writer) error { return chaos.Run(ctx, o.chaos) }
	case o.ba.Dir != "":
		return runBeforeAfter
	}
	return nil
}

// runScenarios runs every strategy of o on every scenario -run selects,
// adding the results to rep, and returns the scenarios it ran.
func runScenarios(ctx context.Context, f *fleet.Fleet, bins map[string]string, o options, rep *report) ([]fleet.Scenario, error) {
	var ran []fleet.Scenario
	for _, sc := range fleet.Scenarios(o.Timing) {
		if !o.run.MatchString(sc.Name) {
			continue
		}
		ran = append(ran, sc)
		l := sc.Lay(o.Cfg.Clusters, o.Cfg.Seed)
		for _, s := range o.Strategies {
			fmt.Fprintf(os.Stderr, "bench-peers: %s on %s (≤ %s)\n", s, sc.Name, sc.Duration)
			res, err := runPeer(ctx, f, bins[s], s, sc, l, o.Cfg)
			if err != nil {
				return nil, err
			}
			rep.Results = append(rep.Results, res)
		}
	}
	return ran, nil
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
	for _, sc := range fleet.Scenarios(o.Timing) {
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
	return fleet.WriteJSON(o.JSONOut, rep)
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
