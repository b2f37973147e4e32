package fleet

import (
	"math/rand/v2"
	"slices"
	"time"

	"github.com/clusterpool/clusterpool/internal/faultproxy"
)

// Scenario is one workload of the fleet.
type Scenario struct {
	Name string
	// Fraction of clusters that get Role; the others are healthy.
	Fraction float64
	Role     string // dead, recovering or flapping; "" for none
	// Saturate requeues every object as soon as it reconciled.
	Saturate bool
	// Duration bounds the run (without Saturate it ends once every
	// measured object reconciled).
	Duration time.Duration
	// RecoverAt and RecoverSpread: a recovering cluster passes traffic
	// from a time drawn from [RecoverAt, RecoverAt+RecoverSpread).
	RecoverAt, RecoverSpread time.Duration
	// FlapPeriod: a flapping cluster is up, then down, for FlapPeriod each,
	// with a random phase.
	FlapPeriod time.Duration
}

// Timing is the scenarios' real-time knobs (flags).
type Timing struct {
	Fraction      float64
	Herd          time.Duration // bound of the herd run
	Dead          time.Duration
	RecoverAt     time.Duration
	RecoverSpread time.Duration
	RecoverAfter  time.Duration // bound of the recovery run after the last recovery
	Flap          time.Duration
	FlapPeriod    time.Duration
}

// Scenarios returns the four scenarios of issue 13.
func Scenarios(t Timing) []Scenario {
	return []Scenario{
		{Name: "herd", Duration: t.Herd},
		{Name: "dead", Fraction: t.Fraction, Role: "dead", Saturate: true, Duration: t.Dead},
		{Name: "recovery", Fraction: t.Fraction, Role: "recovering", RecoverAt: t.RecoverAt,
			RecoverSpread: t.RecoverSpread, Duration: t.RecoverAt + t.RecoverSpread + t.RecoverAfter},
		{Name: "flapping", Fraction: t.Fraction, Role: "flapping", Saturate: true, Duration: t.Flap, FlapPeriod: t.FlapPeriod},
	}
}

// Event switches cluster Cluster's proxy to Mode At after the run starts.
type Event struct {
	At      time.Duration
	Cluster int
	Mode    faultproxy.Mode
}

// Layout is a scenario laid out on m clusters: each cluster's role, its
// proxy's mode at the start, and the switches during the run (sorted by
// time). Every strategy of a scenario gets the same layout.
type Layout struct {
	Roles   []string
	Initial []faultproxy.Mode
	Events  []Event
}

// Lay lays sc out on m clusters with seed: the first Fraction·m clusters of
// a seeded permutation get the role.
func (sc Scenario) Lay(m int, seed uint64) Layout {
	r := rand.New(rand.NewPCG(seed, 13))
	l := Layout{Roles: make([]string, m), Initial: make([]faultproxy.Mode, m)}
	faulty := int(sc.Fraction*float64(m) + 0.5)
	for i, c := range r.Perm(m) {
		l.Roles[c], l.Initial[c] = "healthy", faultproxy.Pass
		if i >= faulty || sc.Role == "" {
			continue
		}
		l.Roles[c] = sc.Role
		switch sc.Role {
		case "dead":
			l.Initial[c] = faultproxy.Hold
		case "recovering":
			l.Initial[c] = faultproxy.Hold
			at := sc.RecoverAt + time.Duration(r.Int64N(int64(max(sc.RecoverSpread, 1))))
			l.Events = append(l.Events, Event{At: at, Cluster: c, Mode: faultproxy.Pass})
		case "flapping":
			// up for a random part of the period first, then down and up
			// for a whole period each
			at := time.Duration(r.Int64N(int64(sc.FlapPeriod)))
			mode := faultproxy.Hold
			for ; at < sc.Duration; at += sc.FlapPeriod {
				l.Events = append(l.Events, Event{At: at, Cluster: c, Mode: mode})
				if mode == faultproxy.Hold {
					mode = faultproxy.Pass
				} else {
					mode = faultproxy.Hold
				}
			}
		}
	}
	slices.SortStableFunc(l.Events, func(a, b Event) int { return int(a.At - b.At) })
	return l
}

// ApplyEvents switches proxies at the events' times (after now) until stop
// is closed, and returns when each cluster was last switched to pass.
func ApplyEvents(proxies []*faultproxy.Proxy, events []Event, stop <-chan struct{}) map[int]time.Time {
	start := time.Now()
	passed := map[int]time.Time{}
	for _, ev := range events {
		t := time.NewTimer(time.Until(start.Add(ev.At)))
		select {
		case <-stop:
			t.Stop()
			return passed
		case <-t.C:
		}
		proxies[ev.Cluster].SetMode(ev.Mode)
		if ev.Mode == faultproxy.Pass {
			passed[ev.Cluster] = time.Now()
		}
	}
	<-stop
	return passed
}
