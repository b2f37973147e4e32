package scale

import (
	"context"
	"flag"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/clusterpool/clusterpool/bench/peers/driver/internal/fleet"
)

// Options are a scale run's command line: the shared flags, and its own.
type Options struct {
	*fleet.Shared
	// From is -scale-from: a scale run's -json file whose fits and tables
	// are redone, with no peer run.
	From string

	run   scaleOptions // the run's flags, as its report records them
	sizes string       // -scale as given
}

// Register defines the scale run's flags on fs; the Options it returns
// read the shared ones from sh.
func Register(fs *flag.FlagSet, sh *fleet.Shared) *Options {
	o := &Options{Shared: sh}
	so := &o.run
	fs.StringVar(&o.sizes, "scale", "", "scale run (make bench-scale): comma-separated fleet sizes, e.g. 100,300,1000; every peer connects all clusters, then idles")
	fs.DurationVar(&so.Idle, "idle", time.Minute, "scale run: each peer's idle window once connected")
	fs.DurationVar(&so.Baseline, "baseline", 20*time.Second, "scale run: window measuring the apiservers' own requests, no peer running")
	fs.DurationVar(&so.Connect, "connect", 5*time.Minute, "scale run: bound of the time until every cluster is connected")
	fs.IntVar(&so.CCTMax, "cct-max", 100, "scale run: run CCT v1.8.4 only on fleets up to this size")
	phaseFlags(fs, so)
	fs.StringVar(&o.From, "scale-from", "", "run no peer: redo the fits and tables of a scale run's -json file")
	return o
}

// Defaults reads -scale's sizes once fs is parsed; a scale run without
// -strategies runs the floor and every peer.
func (o *Options) Defaults(fs *flag.FlagSet) error {
	var err error
	if o.run.Sizes, err = parseSizes(o.sizes); err != nil {
		return err
	}
	if o.On() && !fleet.FlagGiven(fs, "strategies") {
		o.Strategies = []string{"floor", "clusterpool", "clustercache", "cct"}
	}
	return nil
}

// On reports whether the command line asks for a scale run (-scale).
func (o *Options) On() bool { return len(o.run.Sizes) > 0 }

// Run is the scale run, or with From the fits and tables of an earlier
// one's report.
func Run(ctx context.Context, o *Options) error {
	if o.From != "" {
		return rescale(o)
	}
	bins, err := fleet.BuildPeers(ctx, o.Shared)
	if err != nil {
		return err
	}
	return runScale(ctx, o, bins)
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
