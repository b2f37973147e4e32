package sim

import "time"

// Scenario is one workload: a fleet, its faults and how objects are
// enqueued. Durations are unscaled.
type Scenario struct {
	// Name identifies the scenario in tables, JSON and the plot.
	Name string
	// Clusters is the fleet's size; Objects the objects (Machines) per
	// cluster.
	Clusters, Objects int
	// Dead and Flap are the fractions of Dead and Flapping clusters.
	Dead, Flap float64
	// FlapPeriod is how long a flapping cluster stays up, then down.
	FlapPeriod time.Duration
	// RecoverAt makes each Dead cluster reachable from a time drawn from
	// [RecoverAt, RecoverAt+RecoverSpread) on; zero means never.
	RecoverAt time.Duration
	// Duration is how long the run lasts; with Saturate unset, the run ends
	// earlier once every object to be measured reconciled once.
	Duration time.Duration
	// Saturate re-adds an object as soon as it reconciled successfully, as
	// if a watch event arrived at once: demand exceeds the workers, so
	// throughput measures their capacity.
	Saturate bool
	// Memory measures heap, stacks and goroutines once every object
	// reconciled.
	Memory bool
	// Variants are tuned strategies run after the three base ones.
	Variants []string
	// MinScale is the smallest time scale the scenario runs at, whatever
	// Config.Scale says. A timer sleep of the model overshoots by 0.3–0.7
	// ms of real time, more in one model's process than another's (a busier
	// runtime wakes sooner): at scale 0.03 that is 10–20 % of a 100 ms
	// reconcile, at 0.1 it still made the herd's 21 s differ by 0.3–0.7 s
	// between runs of equal models; at 1 (real time) it is below 1 %.
	MinScale float64
}

// BaseStrategies are the three strategies every scenario runs.
var BaseStrategies = []string{"cct", "clustercache", "clusterpool"}

// Strategies returns the strategies sc runs: the base ones, then its
// variants.
func (sc Scenario) Strategies() []string {
	return append(append([]string(nil), BaseStrategies...), sc.Variants...)
}

// DeadSweep is the fractions of dead clusters scenario 2 is run at for the
// plot; 0 is the all-healthy baseline.
var DeadSweep = []float64{0, 0.1, 0.2, 0.3, 0.5}

// Scenarios returns the five scenarios of bench/README.md, with scenario 2 expanded
// over DeadSweep.
func Scenarios() []Scenario {
	s := []Scenario{{
		Name: "1-herd", Clusters: 100, Objects: 20, Duration: 10 * time.Minute, MinScale: 1,
	}}
	for _, f := range DeadSweep {
		s = append(s, Scenario{Name: "2-dead", Clusters: 1000, Objects: 20, Dead: f,
			Duration: 10 * time.Minute, Saturate: true})
	}
	for _, at := range []time.Duration{2 * time.Minute, 10 * time.Minute} {
		s = append(s, Scenario{Name: "3-recovery", Clusters: 100, Objects: 20, Dead: 0.2,
			RecoverAt: at, Duration: at + RecoverSpread + 10*time.Minute, Variants: []string{"clusterpool-maxopen5m", "clusterpool-nojitter"}})
	}
	s = append(s,
		Scenario{Name: "4-flapping", Clusters: 100, Objects: 20, Flap: 0.1, FlapPeriod: 30 * time.Second,
			Duration: 10 * time.Minute, Saturate: true},
		Scenario{Name: "5-scale", Clusters: 10000, Objects: 1, Duration: 30 * time.Minute, Memory: true},
	)
	return s
}
