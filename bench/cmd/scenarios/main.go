package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"regexp"
	"runtime"
	"strings"
	"time"

	"github.com/clusterpool/clusterpool/bench/sim"
)

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "scenarios:", err)
		os.Exit(1)
	}
}

func run() error {
	var cfg sim.Config
	flag.Float64Var(&cfg.Scale, "scale", DefaultScale, "time-scale factor applied to every duration of the model")
	flag.IntVar(&cfg.Workers, "workers", 10, "reconcile workers (MaxConcurrentReconciles)")
	flag.Uint64Var(&cfg.Seed, "seed", 1, "seed of the fault layout and queue order")
	flag.BoolVar(&cfg.LegacyQueue, "legacy-queue", false, "run the controllers on client-go's workqueue instead of controller-runtime's priority queue")
	only := flag.String("run", "", "regexp: run only the scenarios whose name matches")
	strategies := flag.String("strategies", "", "comma-separated strategies to run (of "+strings.Join(sim.Strategies(), ", ")+
		"); empty means each scenario's own: the base three and its tuned variants")
	out := flag.String("json", "", "write the results (and the run's settings) as JSON to this file")
	flag.Parse()
	re, err := regexp.Compile(*only)
	if err != nil {
		return fmt.Errorf("-run: %w", err)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()

	start := time.Now()
	var results []sim.Result
	for _, sc := range sim.Scenarios() {
		if !re.MatchString(sc.Name) {
			continue
		}
		names := sc.Strategies()
		if *strategies != "" {
			names = strings.Split(*strategies, ",")
		}
		for _, s := range names {
			t := time.Now()
			res, err := sim.Run(ctx, sc, s, cfg)
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
	queue := "controller-runtime's priority queue"
	if cfg.LegacyQueue {
		queue = "client-go's workqueue"
	}
	fmt.Printf("Scale %g (figures in unscaled seconds), %d workers, %s, seed %d, %s, GOMAXPROCS %d; wall time %.0f s.\n",
		cfg.Scale, cfg.Workers, queue, cfg.Seed, runtime.Version(), runtime.GOMAXPROCS(0), wall.Seconds())
	for _, sc := range sim.Scenarios() {
		if re.MatchString(sc.Name) && sc.MinScale > cfg.Scale {
			fmt.Printf("%s runs at scale %g (its MinScale).\n", sc.Name, sc.MinScale)
		}
	}
	fmt.Println()
	if err := sim.WriteTable(os.Stdout, results); err != nil {
		return err
	}
	fmt.Println()
	fmt.Print(sim.Headlines(results))
	if *out == "" {
		return nil
	}
	b, err := json.MarshalIndent(struct {
		Scale    float64      `json:"scale"`
		Workers  int          `json:"workers"`
		Legacy   bool         `json:"legacy_queue,omitempty"`
		Seed     uint64       `json:"seed"`
		Go       string       `json:"go"`
		Procs    int          `json:"gomaxprocs"`
		WallSecs float64      `json:"wall_seconds"`
		Results  []sim.Result `json:"results"`
	}{cfg.Scale, cfg.Workers, cfg.LegacyQueue, cfg.Seed, runtime.Version(), runtime.GOMAXPROCS(0), wall.Seconds(), results}, "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(*out, append(b, '\n'), 0o644)
}
