package sim

import (
	"fmt"
	"strings"
)

// Headlines states the benchmark's claims as ratios between results of the
// same run: scenario 2's healthy throughput at 20 % dead against the
// all-healthy run, scenario 1's time until all reconciled, scenario 3's
// recovery latency.
func Headlines(results []Result) string {
	find := func(scenario, strategy string, match func(Result) bool) (Result, bool) {
		for _, r := range results {
			if r.Scenario == scenario && r.Strategy == strategy && (match == nil || match(r)) {
				return r, true
			}
		}
		return Result{}, false
	}
	dead := func(f float64) func(Result) bool { return func(r Result) bool { return r.Dead == f } }
	var b strings.Builder
	for _, s := range BaseStrategies {
		base, ok1 := find("2-dead", s, dead(0))
		d20, ok2 := find("2-dead", s, dead(0.2))
		if ok1 && ok2 && base.SteadyPerSec > 0 {
			fmt.Fprintf(&b, "- 2-dead, %s: healthy throughput at 20%% dead = %.2f× its all-healthy run (steady %.1f vs %.1f /s; whole run %.2f×)\n",
				s, d20.SteadyPerSec/base.SteadyPerSec, d20.SteadyPerSec, base.SteadyPerSec, d20.HealthyPerSec/base.HealthyPerSec)
		}
	}
	if cp, ok := find("2-dead", "clusterpool", dead(0.2)); ok {
		for _, s := range []string{"cct", "clustercache"} {
			if o, ok := find("2-dead", s, dead(0.2)); ok && o.SteadyPerSec > 0 {
				fmt.Fprintf(&b, "- 2-dead at 20%%: clusterpool / %s steady healthy throughput = %.2f×\n", s, cp.SteadyPerSec/o.SteadyPerSec)
			}
		}
	}
	if cp, ok := find("1-herd", "clusterpool", nil); ok && cp.AllReconciled > 0 {
		for _, s := range []string{"cct", "clustercache"} {
			if o, ok := find("1-herd", s, nil); ok {
				fmt.Fprintf(&b, "- 1-herd: every object reconciled after %s (%s) vs %.1f s (clusterpool)\n",
					secs(o.AllReconciled, o.Seconds), s, cp.AllReconciled)
			}
		}
	}
	for _, r := range results {
		if r.Scenario == "3-recovery" {
			fmt.Fprintf(&b, "- 3-recovery after %.0f–%.0f s down, %s: all objects of a cluster reconciled again %s after it came back (mean; max %s)\n",
				r.Down, r.Down+RecoverSpread.Seconds(), r.Strategy, secsOrNever(r.RecoveryMean), secsOrNever(r.RecoveryMax))
		}
	}
	return b.String()
}

func secsOrNever(v float64) string {
	if v < 0 {
		return "never"
	}
	return fmt.Sprintf("%.1f s", v)
}
