package peers

import (
	"bytes"
	"context"
	"flag"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/clusterpool/clusterpool/bench/peers/driver/internal/fleet"
	"github.com/clusterpool/clusterpool/bench/peers/protocol"
)

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

func TestReportTables(t *testing.T) {
	var b strings.Builder
	res := Result{Scenario: "recovery", Strategy: "cct", Dials: 12, FaultyDials: 5, RecoveryMean: -1,
		Figures: protocol.Figures{Version: "v1.8.4", AllReconciled: -1, Seconds: 90, HealthyPerSec: 3.25}}
	if err := writeReal(&b, []Result{res}); err != nil {
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

// A bench-peers run with another tree's clusterpool (-peer) runs it after
// the strategies, from the binary given, and the model check leaves it
// out: bench/sim has no model of it.
func TestPeerInBenchPeersRun(t *testing.T) {
	o, err := parse("-strategies", "cct,clustercache,clusterpool", "-peer", "before=/before/clusterpool", "-run", "^dead$")
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"cct", "clustercache", "clusterpool", "before"}; !reflect.DeepEqual(o.Strategies, want) {
		t.Fatalf("strategies %v, want %v", o.Strategies, want)
	}
	o.Strategies = []string{"before"} // the others would be built
	o.Root = t.TempDir()
	bins, err := fleet.BuildPeers(context.Background(), o.Shared)
	if err != nil || bins["before"] != "/before/clusterpool" {
		t.Fatalf("BuildPeers: %v, %v", bins, err)
	}
	var ran []fleet.Scenario
	for _, sc := range fleet.Scenarios(o.Timing) {
		if o.run.MatchString(sc.Name) {
			ran = append(ran, sc)
		}
	}
	rep := Report{Config: o.Cfg, Results: []Result{{Scenario: "dead", Strategy: "before"}}}
	var out bytes.Buffer
	if err := modelCheck(context.Background(), o, ran, &rep, &out); err != nil {
		t.Fatalf("model check with a -peer result: %v", err)
	}
	if len(rep.Model) != 0 {
		t.Fatalf("the -peer program was modelled: %v", rep.Model)
	}
}

// parse is the driver's command line as far as a bench-peers run reads it.
func parse(args ...string) (*Options, error) {
	fs := flag.NewFlagSet("peers", flag.ContinueOnError)
	sh := fleet.Flags(fs)
	o := Register(fs, sh)
	if err := fs.Parse(args); err != nil {
		return nil, err
	}
	o.ApplySmoke()
	sh.SplitStrategies()
	sh.AddExtra()
	return o, o.Defaults()
}
