package tracing

import (
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"
)

// BreakerStates are the breaker state names the pool reports (those of
// breaker.State.String); their metric attributes are built once by [New].
var BreakerStates = []string{"closed", "half-open", "open"}

// stateAttrs holds the attribute options of the breaker-state metrics for
// every name in BreakerStates and every pair of them, so that counting a
// cluster or a transition builds and hashes no attribute set (a pool with
// many dead clusters makes two transitions per cluster per open period,
// under the cluster's lock). It is read-only after newStateAttrs; a name
// outside BreakerStates gets its options built on each use.
type stateAttrs struct {
	state map[string][]metric.AddOption
	trans map[[2]string][]metric.AddOption
}

func newStateAttrs() stateAttrs {
	a := stateAttrs{state: map[string][]metric.AddOption{}, trans: map[[2]string][]metric.AddOption{}}
	for _, from := range BreakerStates {
		a.state[from] = buildStateOpt(from)
		for _, to := range BreakerStates {
			a.trans[[2]string{from, to}] = buildTransOpt(from, to)
		}
	}
	return a
}

// stateOpt returns the options of a breaker.clusters update for state.
func (a *stateAttrs) stateOpt(state string) []metric.AddOption {
	if o, ok := a.state[state]; ok {
		return o
	}
	return buildStateOpt(state)
}

// transOpt returns the options of a breaker.transitions count.
func (a *stateAttrs) transOpt(from, to string) []metric.AddOption {
	if o, ok := a.trans[[2]string{from, to}]; ok {
		return o
	}
	return buildTransOpt(from, to)
}

func buildStateOpt(state string) []metric.AddOption {
	return []metric.AddOption{metric.WithAttributeSet(attribute.NewSet(BreakerStateKey.String(state)))}
}

func buildTransOpt(from, to string) []metric.AddOption {
	return []metric.AddOption{metric.WithAttributeSet(attribute.NewSet(FromStateKey.String(from), ToStateKey.String(to)))}
}
