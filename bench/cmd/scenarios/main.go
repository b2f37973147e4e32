package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"regexp"
	"runtime"
	"strings"
	"time"

	"github.com/clusterpool/clusterpool/bench/sim"
)

func main() {
	var o options
	o.register(flag.CommandLine)
	flag.Float64Var(&o.cfg.Scale, "scale", DefaultScale, "time-scale factor applied to every duration of the model")
	flag.Parse()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	err := o.table(ctx, os.Stdout, fmt.Sprintf("Scaled real time: scale %g (figures in unscaled seconds)", o.cfg.Scale),
		func(sc sim.Scenario, s string) (sim.Result, error) { return sim.Run(ctx, sc, s, o.cfg) })
	if err != nil {
		fmt.Fprintln(os.Stderr, "scenarios:", err)
		os.Exit(1)
	}
}

// options are the flags of a table run.
type options struct {
	cfg        sim.Config
	only       string // regexp of scenario names
	strategies string // comma-separated; empty: each scenario's own
	jsonOut    string
	mdOut      string
}

func (o *options) register(fs *flag.FlagSet) {
	fs.IntVar(&o.cfg.Workers, "workers", 10, "reconcile workers (MaxConcurrentReconciles)")
	fs.Uint64Var(&o.cfg.Seed, "seed", 1, "seed of the fault layout and queue order")
	fs.BoolVar(&o.cfg.LegacyQueue, "legacy-queue", false, "run the controllers on client-go's workqueue instead of controller-runtime's priority queue")
	fs.StringVar(&o.only, "run", "", "regexp: run only the scenarios whose name matches")
	fs.StringVar(&o.strategies, "strategies", "", "comma-separated strategies to run (of "+strings.Join(sim.Strategies(), ", ")+
		"); empty means each scenario's own: the base three and its tuned variants")
	fs.StringVar(&o.jsonOut, "json", "", "write the results (and the run's settings) as JSON to this file")
	fs.StringVar(&o.mdOut, "md", "", "write the table to this file too")
}

// table runs every selected scenario with every selected strategy through
// run, one after the other, and writes one markdown table and the headline
// ratios to w; clock describes how run keeps time.
func (o options) table(ctx context.Context, w io.Writer, clock string, run func(sim.Scenario, string) (sim.Result, error)) error {
	re, err := regexp.Compile(o.only)
	if err != nil {
		return fmt.Errorf("-run: %w", err)
	}
	start := time.Now()
	var results []sim.Result
	for _, sc := range sim.Scenarios() {
		if !re.MatchString(sc.Name) {
			continue
		}
		names := sc.Strategies()
		if o.strategies != "" {
			names = strings.Split(o.strategies, ",")
		}
		for _, s := range names {
			t := time.Now()
			res, err := run(sc, s)
			if err != nil {
				return err
			}
			fmt.Fprintf(os.Stderr, "%-10s dead=%3.0f%% %-22s %6.1fs wall\n", sc.Name, sc.Dead*100, s, time.Since(t).Seconds())
			results = append(results, res)
			if ctx.Err() != nil {
				return ctx.Err()
			}
		}
	}
	wall := time.Since(start)
	var md strings.Builder
	w = io.MultiWriter(w, &md)
	queue := "controller-runtime's priority queue"
	if o.cfg.LegacyQueue {
		queue = "client-go's workqueue"
	}
	fmt.Fprintf(w, "%s, %d workers, %s, seed %d, %s, GOMAXPROCS %d; wall time %.0f s.\n",
		clock, o.cfg.Workers, queue, o.cfg.Seed, runtime.Version(), runtime.GOMAXPROCS(0), wall.Seconds())
	noted := map[string]bool{}
	for _, r := range results {
		if r.Scale != o.cfg.Scale && !noted[r.Scenario] {
			noted[r.Scenario] = true
			fmt.Fprintf(w, "%s ran at scale %g (its MinScale).\n", r.Scenario, r.Scale)
		}
	}
	fmt.Fprintln(w)
	if err := sim.WriteTable(w, results); err != nil {
		return err
	}
	fmt.Fprintln(w)
	fmt.Fprint(w, sim.Headlines(results))
	if o.mdOut != "" {
		if err := os.WriteFile(o.mdOut, []byte(md.String()), 0o644); err != nil {
			return err
		}
	}
	if o.jsonOut == "" {
		return nil
	}
	b, err := json.MarshalIndent(struct {
		Clock    string       `json:"clock"`
		Scale    float64      `json:"scale"`
		Workers  int          `json:"workers"`
		Legacy   bool         `json:"legacy_queue,omitempty"`
		Seed     uint64       `json:"seed"`
		Go       string       `json:"go"`
		Procs    int          `json:"gomaxprocs"`
		WallSecs float64      `json:"wall_seconds"`
		Results  []sim.Result `json:"results"`
	}{clock, o.cfg.Scale, o.cfg.Workers, o.cfg.LegacyQueue, o.cfg.Seed, runtime.Version(), runtime.GOMAXPROCS(0), wall.Seconds(), results}, "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(o.jsonOut, append(b, '\n'), 0o644)
}
