package breaker

import (
	"math/rand/v2"
	"time"
)

// openPeriod returns the length of the n-th open period in a row (n ≥ 1),
// in (0, max]: base·2^(n-1), scaled below max by a random factor in
// [1-jitter, 1+jitter], capped at max. A period at max is exact: jitter
// spreads the probes of clusters that failed together while their periods
// grow, exact periods keep that spread, and a dead cluster's probe rate and
// the worst delay to notice a recovery stay what max says (a jittered cap,
// ±20 % capped at max, meant 5 % more probes of every dead cluster).
func openPeriod(n uint32, base, maxD time.Duration, jitter float64) time.Duration {
	d := base
	for i := uint32(1); i < n && d < maxD; i++ {
		d *= 2
	}
	if d >= maxD {
		return max(maxD, 1)
	}
	if jitter > 0 {
		f := 1 + jitter*(2*rand.Float64()-1)
		d = time.Duration(float64(d) * f)
	}
	return max(min(d, maxD), 1)
}
