package scale

import (
	"flag"
	"strings"
	"time"
)

// phaseFlags defines, on fs into so, the flags of a scale run's phases
// after connect-all beyond the idle window: the load window and the
// dead-cluster detection, and the -peer programs' largest fleet.
func phaseFlags(fs *flag.FlagSet, so *scaleOptions) {
	fs.DurationVar(&so.IdleBig, "idle-big", 0, "scale run: the idle window on fleets above 1,000 Clusters (0: -idle; keep it a multiple of 60 s, kube.Prober's ReadyzInterval: a shorter window reads 0 or 2× a cadence the connect synchronized)")
	fs.IntVar(&so.PeerMax, "peer-max", 1000, "scale run: run the -peer programs only on fleets up to this size")
	fs.Float64Var(&so.LoadRate, "load-rate", 100, "scale run: after the idle window, Gets per second each peer sends, of the clusters in turn (0: no load window)")
	fs.DurationVar(&so.LoadWindow, "load-window", 20*time.Second, "scale run: how long -load-rate lasts")
	fs.IntVar(&so.PerFault, "kill-per-fault", 3, "scale run: clusters killed per fault class (apiserver stopped, black-hole partition, apiserver killed) after the load window; 0: none")
	fs.DurationVar(&so.DetectWithin, "detect-within", 3*time.Minute, "scale run: how long a peer may take to report every killed cluster not connected")
	fs.Func("detect-peers", "scale run: comma-separated peers that report the killed clusters (default: all but the floor and CCT)", func(v string) error {
		so.DetectPeers = strings.Split(v, ",")
		return nil
	})
}

// detectPeers is o's DetectPeers, or by default every strategy but the
// floor (it has no notion of connected) and CCT.
func detectPeers(o scaleOptions, strategies []string) []string {
	if o.DetectPeers != nil {
		return o.DetectPeers
	}
	var out []string
	for _, s := range strategies {
		if s != "floor" && s != "cct" {
			out = append(out, s)
		}
	}
	return out
}
