package main

import (
	"bytes"
	"context"
	"strings"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"go.uber.org/goleak"
	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/clusterpool/clusterpool/kube"
)

func TestMain(m *testing.M) {
	ctrllog.SetLogger(logr.Discard())
	goleak.VerifyTestMain(m,
		// klog's flush daemon starts once per process, outside any pool.
		goleak.IgnoreTopFunction("k8s.io/klog/v2.(*flushDaemon).run.func1"),
	)
}

// The demo end to end on real apiservers: the healthy clusters reconcile
// within seconds and their condition turns True; the dead one trips its
// breaker, costs no worker more than the wait bound and never reconciles;
// the flapping one is lost and comes back after its network heals.
func TestDemo(t *testing.T) {
	var out bytes.Buffer
	res, err := Run(context.Background(), &out, Config{Duration: 30 * time.Second, Flap: 8 * time.Second, Every: 10 * time.Second})
	if err != nil {
		t.Fatalf("Run: %v\n%s", err, out.String())
	}
	t.Log("\n" + out.String())
	for _, name := range []string{"healthy-1", "healthy-2", "healthy-3"} {
		f := res.Figures[name]
		if f.reconciles == 0 || res.Conditions[name] != "True/Connected" || f.dials != 1 {
			t.Errorf("%s: reconciles %d condition %s dials %d", name, f.reconciles, res.Conditions[name], f.dials)
		}
		if f.first.IsZero() {
			t.Errorf("%s: no first reconcile", name)
		}
	}
	dead := res.Figures["dead"]
	if dead.reconciles != 0 || res.States["dead"] == "closed" || !strings.HasPrefix(res.Conditions["dead"], "False/") {
		t.Errorf("dead: reconciles %d breaker %s condition %s", dead.reconciles, res.States["dead"], res.Conditions["dead"])
	}
	if dead.rejections == 0 || dead.maxGet > time.Second { // bound 50ms; 1s is scheduling slack only
		t.Errorf("dead: rejections %d, longest Get %v", dead.rejections, dead.maxGet)
	}
	// 30s with a 2s, doubling open period: 3 dials to trip, then one probe
	// per period. Each rejected reconcile comes back after RetryAfter, not
	// in a busy loop.
	if dead.dials > 8 || dead.rejections > 500 {
		t.Errorf("dead: %d dials, %d rejections", dead.dials, dead.rejections)
	}
	if flap := res.Figures["flapping"]; len(flap.recoveries) == 0 || flap.reconciles < 2 {
		t.Errorf("flapping: recoveries %v reconciles %d", flap.recoveries, flap.reconciles)
	}
	// A request hung on the flapping cluster ends at its first-byte
	// deadline (kube.DefaultMinFirstByte, 2s) or when the breaker opens,
	// not at the reconciler's 5s timeout.
	if flap := res.Figures["flapping"]; flap.maxRequest >= kube.DefaultMinFirstByte+2*time.Second {
		t.Errorf("flapping: longest request %v, want below the first-byte floor plus slack", flap.maxRequest)
	}
	// The manager's /metrics served the pool's series, with no cluster in
	// them. (Which outcomes the healthy clusters' first Gets had depends on
	// the machine's speed; the dead cluster's are certain.)
	for _, want := range []string{
		`clusterpool_get_outcomes_total{clusterpool_outcome="rejected"} `,
		`clusterpool_dial_duration_seconds_count{clusterpool_dial_result="error"} `,
		`clusterpool_dial_duration_seconds_count{clusterpool_dial_result="success"} `,
		`clusterpool_breaker_transitions_total{clusterpool_breaker_from="closed",clusterpool_breaker_to="open"} `,
		`clusterpool_breaker_clusters{clusterpool_breaker_state="closed"} `,
		"clusterpool_wait_duration_seconds_count{",
	} {
		if !strings.Contains(res.Metrics, want) {
			t.Errorf("/metrics lacks %q; it served:\n%s", want, res.Metrics)
		}
	}
	for _, m := range res.Fleet {
		if strings.Contains(res.Metrics, m.Key.Name) {
			t.Errorf("/metrics names cluster %s", m.Key.Name)
		}
	}
}
