package breaker

import (
	"math/rand/v2"
	"time"
)

// openPeriod returns the length of the n-th open period in a row (n ≥ 1):
// base·2^(n-1), capped at max, then scaled by a random factor in
// [1-jitter, 1+jitter] and capped at max again. The result is always in
// (0, max].
func openPeriod(n uint32, base, maxD time.Duration, jitter float64) time.Duration {
	d := base
	for i := uint32(1); i < n && d < maxD; i++ {
		d *= 2
	}
	d = min(d, maxD)
	if jitter > 0 {
		f := 1 + jitter*(2*rand.Float64()-1)
		d = time.Duration(float64(d) * f)
	}
	return max(min(d, maxD), 1)
}
