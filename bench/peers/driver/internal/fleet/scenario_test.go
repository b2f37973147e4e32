package fleet

import (
	"reflect"
	"slices"
	"testing"
	"time"

	"github.com/clusterpool/clusterpool/internal/faultproxy"
)

func testTiming() Timing {
	return Timing{Fraction: 0.2, Herd: time.Minute, Dead: time.Minute, RecoverAt: 20 * time.Second,
		RecoverSpread: time.Minute, RecoverAfter: time.Minute, Flap: 90 * time.Second, FlapPeriod: 30 * time.Second}
}

func scenarioNamed(t *testing.T, name string) Scenario {
	t.Helper()
	for _, sc := range Scenarios(testTiming()) {
		if sc.Name == name {
			return sc
		}
	}
	t.Fatalf("no scenario %q", name)
	return Scenario{}
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
		if !slices.IsSortedFunc(a.Events, func(x, y Event) int { return int(x.At - y.At) }) {
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
	last := map[int]Event{}
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

func TestCRDServesBothVersions(t *testing.T) {
	root, err := RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	crd, err := loadClusterCRD(root + "/" + clusterCRDFile)
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
