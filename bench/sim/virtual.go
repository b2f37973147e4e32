package sim

import (
	"context"
	"testing"
	"testing/synctest"
)

// RunVirtual is Run in virtual time: the scenario runs in a synctest
// bubble at scale 1, where the clock moves only when every goroutine of
// the run is blocked, straight to the next timer. A reconcile's 100 ms of
// work then takes exactly 100 ms and the code of the strategies (the
// queues, the pool, the models) takes no time at all, so the figures are
// the schedules' own: no timer overshoot magnified by 1/scale, no
// run-to-run noise from a busy machine, and the whole table in seconds.
// What virtual time cannot show, a real CPU's cost, bench/ measures with
// testing.B and bench/peers with the real programs.
//
// cfg.Scale is ignored. It must be called from the test's goroutine (not
// from within another bubble); every goroutine the run starts ends before
// it returns, or the test fails.
func RunVirtual(t *testing.T, sc Scenario, strategy string, cfg Config) (Result, error) {
	t.Helper()
	cfg.Scale = 1
	sc.MinScale = 0
	var (
		res Result
		err error
	)
	synctest.Test(t, func(*testing.T) {
		// The context is the bubble's own: a channel made outside it
		// would keep the clock from moving.
		res, err = Run(context.Background(), sc, strategy, cfg)
	})
	return res, err
}
