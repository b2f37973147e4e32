package fleet

import (
	"errors"
	"flag"
	"io"
	"strings"
	"time"
)

// Shared is the part of the command line every experiment reads, and
// where it runs. Flags fills it; each experiment's Options point to the
// one Shared, so they see its values once the command line is parsed.
type Shared struct {
	// Cfg is the fleet's size and the peers' settings (-clusters,
	// -objects, -workers, -work, -bucket, -seed, -timings).
	Cfg Config
	// APIServers is the number of workload apiservers (-apiservers).
	APIServers int
	// Strategies are the peers to run, in order (-strategies; an
	// experiment may choose its own when the flag is not given).
	Strategies []string
	// Timing is the scenarios' real-time knobs (-fraction, -herd, …).
	Timing Timing
	// Extra are more peers speaking the workload protocol, not built, by
	// name (-peer: the Cluster API drop-in's hook).
	Extra map[string]string
	// JSONOut is the file the report's JSON goes to, "" for none (-json).
	JSONOut string
	// Root is the repository's top directory; Out receives the report.
	// Both are set by the caller, not by flags.
	Root string
	Out  io.Writer

	strategies string // -strategies as given
}

// Flags defines the shared flags on fs and returns the Shared they fill.
// Call SplitStrategies once fs is parsed.
func Flags(fs *flag.FlagSet) *Shared {
	s := &Shared{}
	fs.IntVar(&s.Cfg.Clusters, "clusters", 40, "Cluster objects (M)")
	fs.IntVar(&s.APIServers, "apiservers", 3, "workload apiservers (K)")
	fs.IntVar(&s.Cfg.Objects, "objects", 20, "objects per cluster (N)")
	fs.IntVar(&s.Cfg.Workers, "workers", 10, "workload controller's MaxConcurrentReconciles")
	fs.DurationVar(&s.Cfg.Work, "work", 100*time.Millisecond, "least time a successful reconcile holds its worker (bench/sim's Work)")
	fs.DurationVar(&s.Cfg.Bucket, "bucket", 5*time.Second, "time series bucket")
	fs.Uint64Var(&s.Cfg.Seed, "seed", 1, "fault layout seed")
	fs.Float64Var(&s.Timing.Fraction, "fraction", 0.2, "fraction of dead, recovering or flapping clusters")
	fs.DurationVar(&s.Timing.Herd, "herd", 150*time.Second, "bound of the herd run")
	fs.DurationVar(&s.Timing.Dead, "dead", 60*time.Second, "length of the dead run")
	fs.DurationVar(&s.Timing.RecoverAt, "recover-at", 20*time.Second, "earliest recovery")
	fs.DurationVar(&s.Timing.RecoverSpread, "recover-spread", time.Minute, "recoveries are spread over this (bench/sim's RecoverSpread)")
	fs.DurationVar(&s.Timing.RecoverAfter, "recover-after", 90*time.Second, "bound of the recovery run after the last recovery")
	fs.DurationVar(&s.Timing.Flap, "flap", 90*time.Second, "length of the flapping run")
	fs.DurationVar(&s.Timing.FlapPeriod, "flap-period", 30*time.Second, "flapping clusters' up and down period")
	fs.StringVar(&s.strategies, "strategies", "cct,clustercache,clusterpool", "peers to run, in order")
	fs.StringVar(&s.JSONOut, "json", "", "write every figure, series and the model check to this file")
	fs.BoolVar(&s.Cfg.Timings, "timings", false, "the peers time their reconciles' phases and client-go's requests; printed after the real table")
	fs.Func("peer", "NAME=BINARY: one more peer speaking the workload protocol, not built (the Cluster API drop-in's hook, another tree's clusterpool); repeatable; no model check", BinFlag(&s.Extra))
	return s
}

// AddExtra appends the -peer programs to Strategies.
func (s *Shared) AddExtra() {
	for name := range s.Extra {
		s.Strategies = append(s.Strategies, name)
	}
}

// SplitStrategies sets Strategies from -strategies' value.
func (s *Shared) SplitStrategies() { s.Strategies = strings.Split(s.strategies, ",") }

// ErrNotPositive is Validate's error.
var ErrNotPositive = errors.New("-clusters, -apiservers, -objects and -workers must be positive")

// Validate fails with ErrNotPositive unless the fleet's sizes and the
// workers are positive.
func (s *Shared) Validate() error {
	if s.Cfg.Clusters < 1 || s.APIServers < 1 || s.Cfg.Objects < 1 || s.Cfg.Workers < 1 {
		return ErrNotPositive
	}
	return nil
}
