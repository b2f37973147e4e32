package peers

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"regexp"
	"time"

	"github.com/clusterpool/clusterpool/bench/peers/driver/internal/fleet"
	"github.com/clusterpool/clusterpool/bench/peers/protocol"
)

// Options are the bench-peers run's command line: the shared flags, and
// its own.
type Options struct {
	*fleet.Shared
	// ModelFrom is -model-from: run no peer, redo the model check against
	// the real results in this -json file.
	ModelFrom string
	// Smoke is -smoke: make test's run (ApplySmoke).
	Smoke bool
	// Gray is the gray run's flags (-gray: make bench-gray).
	Gray *GrayOptions

	scale   float64        // -model-scale
	runExpr string         // -run as given
	run     *regexp.Regexp // -run, compiled by Defaults
}

// Register defines the bench-peers run's flags on fs; the Options it
// returns read the shared ones from sh.
func Register(fs *flag.FlagSet, sh *fleet.Shared) *Options {
	o := &Options{Shared: sh, Gray: registerGray(fs)}
	fs.StringVar(&o.runExpr, "run", ".", "regexp of the scenarios to run (herd, dead, recovery, flapping)")
	fs.Float64Var(&o.scale, "model-scale", 0.1, "time scale of the bench/sim model runs (0.01 overshoots 100 ms of work by ≈ 20 %, 0.1 by ≈ 5 %)")
	fs.StringVar(&o.ModelFrom, "model-from", "", "run no peer: redo the model check against the real results in this -json file")
	fs.BoolVar(&o.Smoke, "smoke", false, "the make test smoke: 4 clusters on 1 apiserver, 3 objects, the dead scenario for 10 s; fails unless every peer reconciled")
	return o
}

// ApplySmoke sets -smoke's fleet and scenario, before the other
// experiments' defaults: 4 clusters on 1 apiserver, 3 objects, a quarter
// of them dead for 10 s.
func (o *Options) ApplySmoke() {
	if o.Smoke {
		o.Cfg.Clusters, o.APIServers, o.Cfg.Objects, o.Timing.Fraction, o.Timing.Dead, o.runExpr = 4, 1, 3, 0.25, 10*time.Second, "^dead$"
	}
}

// Defaults compiles -run.
func (o *Options) Defaults() error {
	var err error
	if o.run, err = regexp.Compile(o.runExpr); err != nil {
		return fmt.Errorf("-run: %w", err)
	}
	return nil
}

// Report is the JSON written with -json (read by bench/plot).
type Report struct {
	fleet.Stamp
	Config     fleet.Config `json:"config"`
	APIServers int          `json:"workload_apiservers"`
	Results    []Result     `json:"results"`
	Model      []comparison `json:"model"`
	ModelScale float64      `json:"model_scale"`
}

// Run is the bench-peers run, with -gray the gray run (runGray), or with
// ModelFrom the model check of an earlier run's report.
func Run(ctx context.Context, o *Options) error {
	if o.ModelFrom != "" {
		return remodel(ctx, o, o.Out)
	}
	if o.Gray.On || o.Gray.From != "" {
		return runGray(ctx, o)
	}
	root, out := o.Root, o.Out
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
	rep := Report{Stamp: fleet.NewStamp(start), Config: o.Cfg, APIServers: o.APIServers, ModelScale: o.scale}
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
	if o.Smoke {
		return smokeCheck(rep.Results, len(o.Strategies))
	}
	return nil
}

// runScenarios runs every strategy of o on every scenario -run selects,
// adding the results to rep, and returns the scenarios it ran.
func runScenarios(ctx context.Context, f *fleet.Fleet, bins map[string]string, o *Options, rep *Report) ([]fleet.Scenario, error) {
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
func modelCheck(ctx context.Context, o *Options, ran []fleet.Scenario, rep *Report, out io.Writer) error {
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
func remodel(ctx context.Context, o *Options, out io.Writer) error {
	var rep Report
	if err := protocol.ReadReport(o.ModelFrom, &rep); err != nil {
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
func smokeCheck(results []Result, want int) error {
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
