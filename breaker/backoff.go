package breaker

import (
	"math/rand/v2"
	"time"
)

// openPeriod returns the length of the n-th open period in a row (n ≥ 1):
// base·2^(n-1); below max it is scaled by a random factor in
// [1-jitter, 1+jitter], and the result is capped at max. The result is
// always in (0, max].
//
// A period that reaches max is exact: jitter spreads the probes of clusters
// that failed together while their periods grow, and exact periods at the
// cap keep that spread, while a dead cluster's steady probe rate (one per
// max plus the probe's own hang) and the worst-case delay before a recovered
// cluster is noticed stay exactly what max says. A jittered cap would buy a
// sooner mean recovery only with as many more probes (with jitter capped at
// max, ±20 % meant a mean period of 0.95·max: 5 % more probes of every
// dead cluster).
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
