//go:build race

package pool

// raceEnabled: the race detector slows every synchronisation several times;
// timing slack in tests grows with it.
const raceEnabled = true
