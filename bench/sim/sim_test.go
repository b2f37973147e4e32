package sim

import (
	"context"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// The test runs use small fleets in virtual time; they check what the
// models do by construction (dial counts, who blocks, that everything
// reconciles), never how fast the machine is.
var testCfg = Config{Seed: 7}

func run1(t *testing.T, sc Scenario, strategy string) Result {
	t.Helper()
	res, err := RunVirtual(t, sc, strategy, testCfg)
	if err != nil {
		t.Fatalf("%s on %s: %v", strategy, sc.Name, err)
	}
	return res
}

// Run in scaled real time (bench/peers' model rows, the scenarios
// command's -real-time) reconciles a herd as the virtual run does.
func TestScaledRealTime(t *testing.T) {
	sc := Scenario{Name: "herd", Clusters: 10, Objects: 10, Duration: 10 * time.Minute}
	for _, s := range BaseStrategies {
		res, err := Run(context.Background(), sc, s, Config{Seed: 7, Scale: 0.1}) // the pool's 10 s DialTimeout is 1 s of real time: no dial is starved past it
		if err != nil {
			t.Fatal(err)
		}
		if res.AllReconciled < 0 || res.Dials != 10 || res.Errors != 0 {
			t.Errorf("%s: %+v; want all reconciled, 10 dials, no errors", s, res)
		}
	}
}

// A dial due at the run's end or later is not counted: in virtual time
// it would otherwise count or not by the order of simultaneous timers.
func TestDialsCountOnlyWithinTheRun(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		w := newWorld(2, 0.5, 0, 0, 0, 1, 1)
		w.start, w.until = time.Now(), time.Minute
		ctx, cancel := context.WithTimeout(t.Context(), time.Second)
		defer cancel()
		for range 2 {
			for c := range 2 {
				_, _ = w.Dial(ctx, c)
			}
			time.Sleep(time.Minute)
		}
		dead := w.downDials[0].Load() + w.downDials[1].Load()
		if w.dials.Load() != 2 || dead != 1 {
			t.Errorf("dials %d, dead %d; want the first round only (2, 1)", w.dials.Load(), dead)
		}
	})
}

func TestWorldLayout(t *testing.T) {
	w := newWorld(100, 0.2, 0.1, time.Minute, 30*time.Second, 0.01, 1)
	var dead, flap int
	for c := range 100 {
		switch w.Fault(c) {
		case Dead:
			dead++
			if at := w.RecoveredAt(c); at < time.Minute || at >= time.Minute+RecoverSpread {
				t.Errorf("cluster %d recovers at %v, want in [1m, 2m)", c, at)
			}
		case Flapping:
			flap++
		}
	}
	if dead != 20 || flap != 10 {
		t.Errorf("dead=%d flapping=%d, want 20 and 10", dead, flap)
	}
	if again := newWorld(100, 0.2, 0.1, time.Minute, 30*time.Second, 0.01, 1); again.faults[0] != w.faults[0] ||
		again.recoverAt[3] != w.recoverAt[3] {
		t.Error("the same seed gave another layout")
	}
}

// Every strategy reconciles a happy herd with one dial per cluster; only
// CCT answers the herd with ErrClusterLocked (one-minute requeues).
func TestHappyHerd(t *testing.T) {
	sc := Scenario{Name: "herd", Clusters: 10, Objects: 10, Duration: 10 * time.Minute}
	for _, s := range Strategies() {
		res := run1(t, sc, s)
		if res.AllReconciled < 0 || res.Dials != 10 || res.Errors != 0 || res.Clients != 10 {
			t.Errorf("%s: %+v; want all reconciled, 10 dials, no errors, 10 clients", s, res)
		}
	}
}

// With dead clusters, CCT's lock winners hang in their workers for the dial
// timeout, clusterpool's callers do not; clusterpool opens the breakers and
// stops dialing dead clusters on every reconcile.
func TestDeadClusters(t *testing.T) {
	sc := Scenario{Name: "dead", Clusters: 10, Objects: 10, Dead: 0.3, Duration: 3 * time.Minute, Saturate: true}
	cct, cp := run1(t, sc, "cct"), run1(t, sc, "clusterpool")
	if cct.BlockedWorkerSeconds < 30 {
		t.Errorf("cct blocked %.0f worker-s; every dead dial blocks a worker for 10s", cct.BlockedWorkerSeconds)
	}
	if cp.BlockedWorkerSeconds >= cct.BlockedWorkerSeconds/2 {
		t.Errorf("clusterpool blocked %.0f worker-s, cct %.0f", cp.BlockedWorkerSeconds, cct.BlockedWorkerSeconds)
	}
	if cp.AllReconciled < 0 || cp.Clients != 7 {
		t.Errorf("clusterpool: %+v; want every healthy object reconciled and 7 clients", cp)
	}
	// Every healthy cluster connects within its first dials (200 ms each,
	// none queued behind the 3 dead ones), and the rate of dead dials is
	// their breakers' (at most one per 10 s hang + 5 s open period).
	if cp.HealthyConnected < 0.2 || cp.HealthyConnected > 1 || cp.DeadDialsPerMin <= 0 || cp.DeadDialsPerMin > 4 {
		t.Errorf("clusterpool: healthy connected after %.1f s, %.2f dead dials/min", cp.HealthyConnected, cp.DeadDialsPerMin)
	}
	// 3 dials to open a breaker, then one probe per open period (5s, 10s,
	// 20s, 40s, 80s ±20 %) within 3 minutes: at most 9 per dead cluster.
	if max := int64(7 + 3*9); cp.Dials > max {
		t.Errorf("clusterpool dialed %d times, want at most %d", cp.Dials, max)
	}
}

// Every strategy reconciles the objects of a cluster that comes back.
func TestRecovery(t *testing.T) {
	sc := Scenario{Name: "recovery", Clusters: 10, Objects: 5, Dead: 0.2, RecoverAt: 30 * time.Second,
		Duration: 30*time.Second + RecoverSpread + 5*time.Minute}
	for _, s := range Strategies() {
		if res := run1(t, sc, s); res.RecoveryMean <= 0 || res.RecoveryMax < res.RecoveryMean {
			t.Errorf("%s: recovery %.1f / %.1f s; want every object reconciled after its cluster came back",
				s, res.RecoveryMean, res.RecoveryMax)
		}
	}
}

func TestTableAndHeadlines(t *testing.T) {
	results := []Result{
		{Scenario: "1-herd", Strategy: "cct", AllReconciled: 66, Seconds: 66},
		{Scenario: "1-herd", Strategy: "clusterpool", AllReconciled: 26, Seconds: 26},
		{Scenario: "2-dead", Strategy: "clusterpool", Dead: 0, SteadyPerSec: 80, HealthyPerSec: 78},
		{Scenario: "2-dead", Strategy: "clusterpool", Dead: 0.2, SteadyPerSec: 76, HealthyPerSec: 75},
		{Scenario: "3-recovery", Strategy: "cct", Down: 120, RecoveryMean: 30, RecoveryMax: 60},
	}
	var b strings.Builder
	if err := WriteTable(&b, results); err != nil {
		t.Fatal(err)
	}
	if got := strings.Count(b.String(), "\n"); got != 2+len(results) {
		t.Errorf("table has %d lines, want %d:\n%s", got, 2+len(results), b.String())
	}
	h := Headlines(results)
	for _, want := range []string{"= 0.95× its all-healthy run", "66.0 s (cct) vs 26.0 s", "30.0 s after it came back (mean; max 60.0 s)"} {
		if !strings.Contains(h, want) {
			t.Errorf("headlines lack %q:\n%s", want, h)
		}
	}
}

// On flapping clusters, requests on an established client hang until the
// 10s REST timeout for ClusterCache; clusterpool's request guard ends them
// at the first-byte deadline (2s, halved per timeout in a row) or when the
// breaker opens, and rejects the rest at once.
func TestFlappingRequestsAreBounded(t *testing.T) {
	sc := Scenario{Name: "flapping", Clusters: 10, Objects: 10, Flap: 0.3, FlapPeriod: 30 * time.Second,
		Duration: 3 * time.Minute, Saturate: true}
	cc, cp := run1(t, sc, "clustercache"), run1(t, sc, "clusterpool")
	if cc.P99Ms < 9000 {
		t.Errorf("clustercache p99 %.0f ms; a request to a flapping cluster that went down hangs 10s", cc.P99Ms)
	}
	if cp.P99Ms > 5000 {
		t.Errorf("clusterpool p99 %.0f ms; its requests end within the 2s first-byte deadline", cp.P99Ms)
	}
	if cp.HungWorkerSeconds >= cc.HungWorkerSeconds/2 {
		t.Errorf("clusterpool lost %.0f worker-s to failed requests, clustercache %.0f", cp.HungWorkerSeconds, cc.HungWorkerSeconds)
	}
}
