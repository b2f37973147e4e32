package main

import (
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/clusterpool/clusterpool/bench/peers/driver/internal/fleet"
	"github.com/clusterpool/clusterpool/bench/peers/protocol"
	"github.com/clusterpool/clusterpool/internal/faultproxy"
)

func testTiming() fleet.Timing {
	return fleet.Timing{Fraction: 0.2, Herd: time.Minute, Dead: time.Minute, RecoverAt: 20 * time.Second,
		RecoverSpread: time.Minute, RecoverAfter: time.Minute, Flap: 90 * time.Second, FlapPeriod: 30 * time.Second}
}

func scenarioNamed(t *testing.T, name string) fleet.Scenario {
	t.Helper()
	for _, sc := range fleet.Scenarios(testTiming()) {
		if sc.Name == name {
			return sc
		}
	}
	t.Fatalf("no scenario %q", name)
	return fleet.Scenario{}
}

func TestLayoutIsSeededAndSized(t *testing.T) {
	for _, name := range []string{"herd", "dead", "recovery", "flapping"} {
		sc := scenarioNamed(t, name)
		a, b := sc.Lay(40, 7), sc.Lay(40, 7)
		if !reflect.DeepEqual(a, b) {
			t.Fatalf("%s: same seed, different layouts", name)
		}
		faulty := 0
		for _, r := range a.Roles {
			if r != "healthy" {
				faulty++
				if r != sc.Role {
					t.Fatalf("%s: role %q, want %q", name, r, sc.Role)
				}
			}
		}
		if want := int(sc.Fraction*40 + 0.5); faulty != want {
			t.Fatalf("%s: %d faulty clusters, want %d", name, faulty, want)
		}
		if !slices.IsSortedFunc(a.Events, func(x, y fleet.Event) int { return int(x.At - y.At) }) {
			t.Fatalf("%s: events not sorted", name)
		}
	}
}

func TestRecoveringClustersPassOnceInTheirWindow(t *testing.T) {
	sc := scenarioNamed(t, "recovery")
	l := sc.Lay(50, 3)
	seen := map[int]bool{}
	for _, ev := range l.Events {
		if ev.Mode != faultproxy.Pass || ev.At < sc.RecoverAt || ev.At >= sc.RecoverAt+sc.RecoverSpread || seen[ev.Cluster] {
			t.Fatalf("bad recovery event %+v", ev)
		}
		if l.Initial[ev.Cluster] != faultproxy.Hold {
			t.Fatalf("cluster %d recovers but does not start held", ev.Cluster)
		}
		seen[ev.Cluster] = true
	}
	if len(seen) != 10 {
		t.Fatalf("%d clusters recover, want 10", len(seen))
	}
}

func TestFlappingAlternatesEveryPeriod(t *testing.T) {
	sc := scenarioNamed(t, "flapping")
	l := sc.Lay(20, 5)
	last := map[int]fleet.Event{}
	for _, ev := range l.Events {
		if ev.At >= sc.Duration {
			t.Fatalf("event after the run: %+v", ev)
		}
		prev, ok := last[ev.Cluster]
		switch {
		case !ok && ev.Mode != faultproxy.Hold:
			t.Fatalf("cluster %d does not go down first", ev.Cluster)
		case ok && (ev.Mode == prev.Mode || ev.At-prev.At != sc.FlapPeriod):
			t.Fatalf("cluster %d: %+v after %+v", ev.Cluster, ev, prev)
		}
		last[ev.Cluster] = ev
	}
	if len(last) != 4 {
		t.Fatalf("%d clusters flap, want 4", len(last))
	}
}

func TestRecovery(t *testing.T) {
	at := time.UnixMilli(10_000)
	names := []string{"a", "b"}
	mean, worst := recovery(names, map[int]time.Time{0: at, 1: at}, map[string]int64{"a": 12_000, "b": 16_000}, true)
	if mean != 4 || worst != 6 {
		t.Fatalf("mean %v max %v, want 4 and 6", mean, worst)
	}
	if mean, _ := recovery(names, map[int]time.Time{0: at, 1: at}, map[string]int64{"a": 12_000}, true); mean != -1 {
		t.Fatalf("a cluster that never finished gave %v, want -1", mean)
	}
}

func TestComparisonOff(t *testing.T) {
	for _, c := range []struct {
		model, real float64
		off         bool
	}{{100, 100, false}, {119, 100, false}, {121, 100, true}, {79, 100, true}, {0, 0, false}, {1, 0, true},
		{-1, -1, false}, {-1, 30, true}, {30, -1, true}} {
		if got := (comparison{Model: c.model, Real: c.real}).Off(); got != c.off {
			t.Errorf("model %v real %v: Off %v, want %v", c.model, c.real, got, c.off)
		}
	}
}

func TestCRDServesBothVersions(t *testing.T) {
	root, err := fleet.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	crd, err := fleet.LoadClusterCRD(root + "/" + fleet.ClusterCRDFile)
	if err != nil {
		t.Fatal(err)
	}
	vs := crd.Object["spec"].(map[string]any)["versions"].([]any)
	storage := map[string]bool{}
	for _, v := range vs {
		m := v.(map[string]any)
		storage[m["name"].(string)] = m["storage"].(bool)
	}
	if !reflect.DeepEqual(storage, map[string]bool{"v1beta1": true, "v1beta2": false}) {
		t.Fatalf("versions %v", storage)
	}
}

func TestReportTables(t *testing.T) {
	var b strings.Builder
	res := result{Scenario: "recovery", Strategy: "cct", Dials: 12, FaultyDials: 5, RecoveryMean: -1,
		Figures: protocol.Figures{Version: "v1.8.4", AllReconciled: -1, Seconds: 90, HealthyPerSec: 3.25}}
	if err := writeReal(&b, []result{res}); err != nil {
		t.Fatal(err)
	}
	if s := b.String(); !strings.Contains(s, "| recovery | cct v1.8.4 | > 90 s | 3.2 |") || !strings.Contains(s, "| 12 (5) | never |") {
		t.Fatalf("real table:\n%s", s)
	}
	b.Reset()
	if err := writeModel(&b, []comparison{{Scenario: "dead", Strategy: "cct", Figure: "p99 ms", Model: 150, Real: 100}}); err != nil {
		t.Fatal(err)
	}
	if s := b.String(); !strings.Contains(s, "| dead | cct | p99 ms | 150 | 100 | 1.50× | **> 20 %** |") {
		t.Fatalf("model table:\n%s", s)
	}
}
