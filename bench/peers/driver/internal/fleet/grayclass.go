package fleet

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"time"

	"github.com/clusterpool/clusterpool/internal/grayproxy"
)

// GrayClass is what a Cluster's grayproxy does in the gray run (issue 43's
// fault classes); "" is a healthy Cluster.
type GrayClass string

// The gray classes.
const (
	// GraySlow answers everything GrayFaults.SlowFactor times slower than
	// the apiserver.
	GraySlow GrayClass = "slow"
	// GrayErrors20, GrayErrors40 and GrayErrors60 answer 20, 40 and 60 %
	// of the requests 500 or 503 themselves, interleaved (at 60 %, never
	// three in a row); the others pass.
	GrayErrors20 GrayClass = "errors-20"
	GrayErrors40 GrayClass = "errors-40"
	GrayErrors60 GrayClass = "errors-60"
	// GrayThrottled answers GrayFaults.ThrottleRate of the requests 429
	// with Retry-After, as API Priority and Fairness does; the others pass.
	GrayThrottled GrayClass = "throttled"
)

// GrayClasses are the classes in the order the report lists them.
var GrayClasses = []GrayClass{GraySlow, GrayErrors20, GrayErrors40, GrayErrors60, GrayThrottled}

// GrayFaults are the classes' settings.
type GrayFaults struct {
	// SlowFactor: a slow Cluster's answers take this many times the
	// apiserver's own time to headers.
	SlowFactor float64
	// ThrottleRate is the share of a throttled Cluster's requests answered
	// 429, RetryAfter their Retry-After.
	ThrottleRate float64
	RetryAfter   time.Duration
}

// DefaultGrayFaults are the classes' settings unless a run's flags say
// otherwise: 10 times slower; half the requests throttled, Retry-After
// one second.
var DefaultGrayFaults = GrayFaults{SlowFactor: 10, ThrottleRate: 0.5, RetryAfter: time.Second}

// Of is class's fault, its sequence (which requests fail, 500 or 503)
// drawn from seed; Pass for a healthy Cluster.
func (g GrayFaults) Of(class GrayClass, seed uint64) grayproxy.Fault {
	switch class {
	case GraySlow:
		return grayproxy.SlowBy(g.SlowFactor)
	case GrayErrors20:
		return grayproxy.ErrorRate(0.2, seed)
	case GrayErrors40:
		return grayproxy.ErrorRate(0.4, seed)
	case GrayErrors60:
		return grayproxy.ErrorRate(0.6, seed)
	case GrayThrottled:
		f := grayproxy.Throttle(g.ThrottleRate, g.RetryAfter)
		f.Seed = seed
		return f
	}
	return grayproxy.PassFault()
}

// ErrGrayFleetTooSmall is LayGray's error when the classes do not fit.
var ErrGrayFleetTooSmall = errors.New("gray run: the fleet is too small for its classes")

// LayGray assigns the gray classes to m Clusters from seed: in a seeded
// permutation, the first n = round(fraction·m) (at least one each) are
// slow, the next n at 40 % errors, the next n throttled, then one at 60 %
// and one at 20 % errors; the rest are healthy (""). Every strategy, and
// the baseline run, get the same assignment.
func LayGray(m int, fraction float64, seed uint64) ([]GrayClass, error) {
	n := max(int(fraction*float64(m)+0.5), 1)
	plan := []struct {
		class GrayClass
		count int
	}{{GraySlow, n}, {GrayErrors40, n}, {GrayThrottled, n}, {GrayErrors60, 1}, {GrayErrors20, 1}}
	gray := 3*n + 2
	if gray >= m {
		return nil, fmt.Errorf("%w: %d gray Clusters of %d leave none healthy", ErrGrayFleetTooSmall, gray, m)
	}
	classes := make([]GrayClass, m)
	perm := rand.New(rand.NewPCG(seed, 43)).Perm(m)
	for _, p := range plan {
		for range p.count {
			classes[perm[0]], perm = p.class, perm[1:]
		}
	}
	return classes, nil
}
