package peers

import (
	"context"
	"flag"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/clusterpool/clusterpool/bench/peers/driver/internal/fleet"
	"github.com/clusterpool/clusterpool/bench/peers/protocol"
	"github.com/clusterpool/clusterpool/internal/grayproxy"
)

// GrayOptions are the gray run's flags (-gray and -gray-…).
type GrayOptions struct {
	// On is -gray: run the gray experiment instead of the four scenarios.
	On bool
	// From is -gray-from: run nothing, compute the figures of this -json
	// file's runs again and print the report.
	From string
	// Warmup: every Cluster passes this long first (all connect); For:
	// then the faults are in force this long.
	Warmup, For time.Duration
	// Fraction of the Clusters in each of slow, 40 % errors and
	// throttled (LayGray).
	Fraction float64
	Faults   fleet.GrayFaults
	// Sample is how often the peer asks whether each gray Cluster is
	// connected (and its breaker open).
	Sample time.Duration
}

// registerGray defines the gray run's flags on fs.
func registerGray(fs *flag.FlagSet) *GrayOptions {
	g := &GrayOptions{}
	fs.BoolVar(&g.On, "gray", false, "the gray run (make bench-gray): slow, erroring and throttled Clusters behind grayproxies; each strategy once with no fault (baseline) and once with them")
	fs.StringVar(&g.From, "gray-from", "", "run nothing: compute the figures of this -json file's runs again and print its report (-json: write it)")
	fs.DurationVar(&g.Warmup, "gray-warmup", 15*time.Second, "gray run: every Cluster passes this long first")
	fs.DurationVar(&g.For, "gray-for", 165*time.Second, "gray run: how long the faults are in force")
	fs.Float64Var(&g.Fraction, "gray-fraction", 0.1, "gray run: fraction of the Clusters slow, at 40 % errors, and throttled (each); one more at 60 % and one at 20 % errors")
	fs.Float64Var(&g.Faults.SlowFactor, "gray-slow-factor", fleet.DefaultGrayFaults.SlowFactor, "gray run: a slow Cluster answers this many times slower than its apiserver")
	fs.Float64Var(&g.Faults.ThrottleRate, "gray-throttle-rate", fleet.DefaultGrayFaults.ThrottleRate, "gray run: share of a throttled Cluster's requests answered 429")
	fs.DurationVar(&g.Faults.RetryAfter, "gray-retry-after", fleet.DefaultGrayFaults.RetryAfter, "gray run: the 429s' Retry-After")
	fs.DurationVar(&g.Sample, "gray-sample", 100*time.Millisecond, "gray run: how often the peer samples each gray Cluster's state")
	return g
}

// grayReport is the gray run's JSON (-json; read by bench/plot -gray).
type grayReport struct {
	fleet.Stamp
	Config     fleet.Config     `json:"config"`
	APIServers int              `json:"workload_apiservers"`
	Warmup     time.Duration    `json:"warmup_ns"`
	For        time.Duration    `json:"faults_for_ns"`
	Fraction   float64          `json:"fraction"`
	Faults     fleet.GrayFaults `json:"faults"`
	Strategies []string         `json:"strategies"`
	Runs       []grayRun        `json:"runs"`
	Figures    []grayFigure     `json:"figures"`
}

// runGray is the gray run: one fleet, every Cluster behind a grayproxy,
// each strategy run twice on the same workload (saturated): baseline, no
// fault; gray, the classes' faults after the warmup.
func runGray(ctx context.Context, o *Options) error {
	if o.Gray.From != "" {
		var rep grayReport
		if err := protocol.ReadReport(o.Gray.From, &rep); err != nil {
			return err
		}
		rep.Figures = grayFigures(rep.Strategies, rep.Runs)
		if err := writeGray(o.Out, rep); err != nil {
			return err
		}
		return fleet.WriteJSON(o.JSONOut, rep)
	}
	g := o.Gray
	classes, err := fleet.LayGray(o.Cfg.Clusters, g.Fraction, o.Cfg.Seed)
	if err != nil {
		return err
	}
	bins, err := fleet.BuildPeers(ctx, o.Shared)
	if err != nil {
		return err
	}
	start := time.Now()
	fmt.Fprintf(os.Stderr, "bench-gray: starting %d apiservers, %d Clusters × %d objects\n", 1+o.APIServers, o.Cfg.Clusters, o.Cfg.Objects)
	f, err := fleet.Start(ctx, o.Root, o.Cfg.Clusters, o.APIServers, o.Cfg.Objects)
	if err != nil {
		return err
	}
	defer f.Stop()
	proxies, err := f.StartGray(ctx)
	if err != nil {
		return err
	}
	defer proxies.Close()
	rep := grayReport{Stamp: fleet.NewStamp(start), Config: o.Cfg, APIServers: o.APIServers, Warmup: g.Warmup, For: g.For,
		Fraction: g.Fraction, Faults: g.Faults, Strategies: o.Strategies}
	for _, s := range o.Strategies {
		for _, phase := range []string{"baseline", "gray"} {
			fmt.Fprintf(os.Stderr, "bench-gray: %s, %s (%s)\n", s, phase, g.Warmup+g.For)
			run, err := runGrayPeer(ctx, f, proxies, bins[s], s, phase, classes, o)
			if err != nil {
				return err
			}
			rep.Runs = append(rep.Runs, run)
		}
	}
	rep.Figures = grayFigures(o.Strategies, rep.Runs)
	if err := writeGray(o.Out, rep); err != nil {
		return err
	}
	fmt.Fprintf(o.Out, "\n%s wall.\n", time.Since(start).Round(time.Second))
	return fleet.WriteJSON(o.JSONOut, rep)
}

// runGrayPeer runs one strategy once on the gray fleet: every proxy passes
// for the warmup, then (phase gray) each takes its class's fault; the
// peer measures from then on.
func runGrayPeer(ctx context.Context, f *fleet.Fleet, proxies *fleet.Gray, bin, strategy, phase string, classes []fleet.GrayClass, o *Options) (grayRun, error) {
	g := o.Gray
	if err := proxies.Pass(); err != nil {
		return grayRun{}, err
	}
	sc := fleet.Scenario{Name: "gray " + phase, Saturate: true, Duration: g.Warmup + g.For}
	roles := make([]string, len(classes))
	var sampled []string
	var clusters []grayCluster
	var index []int // clusters[j] is Cluster index[j]
	for i, c := range classes {
		roles[i] = workloadRole(c)
		if c != "" {
			sampled = append(sampled, f.Names[i])
			clusters = append(clusters, grayCluster{Name: f.Names[i], Class: c, Host: proxies.Proxies[i].Addr()})
			index = append(index, i)
		}
	}
	from := time.Now().Add(g.Warmup)
	args := append(peerArgs(f.Kubeconfig, f.Names, roles, sc, o.Cfg), "-measure-from", fmt.Sprint(from.UnixMilli()),
		"-sample-connected", g.Sample.String(), "-sample-clusters", strings.Join(sampled, ","))
	var before []grayproxy.Counts
	var setErr error
	during := func(stop <-chan struct{}) {
		t := time.NewTimer(time.Until(from))
		defer t.Stop()
		select {
		case <-stop:
		case <-t.C:
			before = totals(proxies)
			if phase == "gray" {
				setErr = proxies.Set(classes, g.Faults, o.Cfg.Seed)
			}
		}
	}
	figures, err := execPeer(ctx, bin, strategy, sc, args, during)
	if err == nil && before == nil {
		err = fmt.Errorf("%s, %s: the peer exited before the faults' start", strategy, phase)
	}
	if err == nil {
		err = setErr
	}
	if err != nil {
		return grayRun{}, err
	}
	after := totals(proxies)
	for j, i := range index {
		clusters[j].Reached = after[i].Received() - before[i].Received()
		clusters[j].Faulted = after[i].Faulted - before[i].Faulted
	}
	return grayRun{Strategy: strategy, Phase: phase, FaultsFromUnixMs: from.UnixMilli(), Figures: figures, Clusters: clusters}, proxies.Pass()
}

// workloadRole is the peer's role of a Cluster of class.
func workloadRole(class fleet.GrayClass) string {
	if class == "" {
		return "healthy"
	}
	return "gray"
}

// totals are each proxy's counts of every request it received so far.
func totals(proxies *fleet.Gray) []grayproxy.Counts {
	counts := make([]grayproxy.Counts, len(proxies.Proxies))
	for i, p := range proxies.Proxies {
		counts[i] = p.Total()
	}
	return counts
}
