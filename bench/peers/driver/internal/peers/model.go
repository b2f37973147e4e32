package peers

import (
	"context"
	"fmt"
	"slices"

	"github.com/clusterpool/clusterpool/bench/peers/driver/internal/fleet"
	"github.com/clusterpool/clusterpool/bench/sim"
)

// modelScenario is sc as bench/sim runs it, on the same fleet size,
// objects, fractions and timings.
func modelScenario(sc fleet.Scenario, cfg fleet.Config) sim.Scenario {
	s := sim.Scenario{Name: sc.Name, Clusters: cfg.Clusters, Objects: cfg.Objects, Duration: sc.Duration, Saturate: sc.Saturate}
	switch sc.Role {
	case "dead":
		s.Dead = sc.Fraction
	case "recovering":
		s.Dead, s.RecoverAt = sc.Fraction, sc.RecoverAt
	case "flapping":
		s.Flap, s.FlapPeriod = sc.Fraction, sc.FlapPeriod
	}
	return s
}

// runModel runs bench/sim's model of strategy on sc at scale.
func runModel(ctx context.Context, sc fleet.Scenario, strategy string, cfg fleet.Config, scale float64) (sim.Result, error) {
	res, err := sim.Run(ctx, modelScenario(sc, cfg), strategy, sim.Config{Scale: scale, Workers: cfg.Workers, Seed: cfg.Seed})
	if err != nil {
		return sim.Result{}, fmt.Errorf("model of %s on %s: %w", strategy, sc.Name, err)
	}
	return res, nil
}

// comparison is one figure of one strategy on one scenario, model and real.
type comparison struct {
	Scenario string  `json:"scenario"`
	Strategy string  `json:"strategy"`
	Figure   string  `json:"figure"`
	Model    float64 `json:"model"`
	Real     float64 `json:"real"`
}

// Off reports whether model and real differ by more than 20 % of real.
func (c comparison) Off() bool {
	if c.Real < 0 || c.Model < 0 { // a time one side never reached
		return (c.Real < 0) != (c.Model < 0)
	}
	if c.Real == 0 {
		return c.Model != 0
	}
	d := (c.Model - c.Real) / c.Real
	return d > 0.2 || d < -0.2
}

// compare lists the figures both sides have.
func compare(m sim.Result, r Result) []comparison {
	f := r.Figures
	rows := []struct {
		name        string
		model, real float64
		when        bool
	}{
		{"all reconciled s", m.AllReconciled, f.AllReconciled, true},
		{"healthy reconciles/s", m.HealthyPerSec, f.HealthyPerSec, true},
		{"p50 ms", m.P50Ms, f.P50Ms, true},
		{"p99 ms", m.P99Ms, f.P99Ms, true},
		{"blocked worker-s", m.BlockedWorkerSeconds, f.BlockedWorkerSeconds, true},
		{"requeues", float64(m.Requeues), float64(f.Requeues), true},
		{"errors", float64(m.Errors), float64(f.Errors), true},
		{"dials", float64(m.Dials), float64(r.Dials), true},
		{"recovery mean s", m.RecoveryMean, r.RecoveryMean, r.Scenario == "recovery"},
	}
	var out []comparison
	for _, row := range rows {
		if row.when {
			out = append(out, comparison{Scenario: r.Scenario, Strategy: r.Strategy, Figure: row.name, Model: row.model, Real: row.real})
		}
	}
	return out
}

// hasModel reports whether bench/sim models strategy: a -peer program
// (another tree's clusterpool, say) has no model to check it against.
func hasModel(strategy string) bool { return slices.Contains(sim.Strategies(), strategy) }
