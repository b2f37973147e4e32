package chaos

import (
	"flag"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/clusterpool/clusterpool/bench/peers/driver/internal/fleet"
	"github.com/clusterpool/clusterpool/bench/peers/protocol"
)

// The drop-in is behind where its p50 or p99 exceeds the stock cache's +
// 10 % + 0.5 s: at the limit it is not; a never is behind a time, not
// behind a never; a class either lacks is not compared.
func TestBehindListTolerance(t *testing.T) {
	st := func(class string, n int, p50, p99 float64) classStats {
		return classStats{Class: class, Samples: n, P50: p50, P99: p99}
	}
	dropIn := []classStats{
		st(faultReset, 16, 11.7, 37.1),         // p50 behind 2.8 (limit 3.58); p99 ahead
		st(faultTrickle, 17, 0.5, 6),           // at the limits of 0 and 5 (0.5, 6.0): not behind
		st(faultTokenRotate, 17, 0.51, 6.01),   // just past them: behind at both
		st(faultBlackhole, 17, -1, -1),         // never, where stock came back: behind at both
		st(faultFirstByte, 17, -1, 3),          // never where stock never: not behind; p99 fine
		st(faultInfraFlip, 16, 0.3, 29.3),      // stock has no samples: not compared
		st(faultCertRotate, 0, 0, 0),           // no samples: not compared
		st(faultMgmtRestart, 1717, 15.0, 75.9), // ahead
	}
	stock := []classStats{
		st(faultReset, 16, 2.8, 64.2),
		st(faultTrickle, 18, 0, 5),
		st(faultTokenRotate, 16, 0, 5),
		st(faultBlackhole, 16, 4.1, 24.7),
		st(faultFirstByte, 17, -1, 36.7),
		st(faultInfraFlip, 0, 0, 0),
		st(faultCertRotate, 17, 10.1, 87.6),
		st(faultMgmtRestart, 1715, 14.6, 95.6),
	}
	got := behindList(dropIn, stock)
	type key struct{ class, q string }
	var keys []key
	for _, r := range got {
		keys = append(keys, key{r.Class, r.Quantile})
	}
	want := []key{{faultBlackhole, "p50"}, {faultBlackhole, "p99"}, {faultReset, "p50"}, {faultTokenRotate, "p50"}, {faultTokenRotate, "p99"}}
	if !slices.Equal(keys, want) {
		t.Fatalf("behind %v, want %v (registry order)", keys, want)
	}
	if r := got[2]; r.DropIn != 11.7 || r.Stock != 2.8 || r.Limit < 3.579 || r.Limit > 3.581 {
		t.Fatalf("reset p50 row %+v, want 11.7 vs 2.8, limit 3.58", r)
	}
}

// The report lists where the drop-in is behind and both times to connect
// the fleet, under the caches' names; with one cache it has no such
// section.
func TestReportListsWhereTheDropInIsBehind(t *testing.T) {
	dropIn := chaosResult{Cache: "adapter", Warmup: 25, Classes: []classStats{{Class: faultReset, Samples: 16, P50: 11.7, P99: 37.1}}}
	stock := chaosResult{Cache: "stock", Warmup: 17, Classes: []classStats{{Class: faultReset, Samples: 16, P50: 2.8, P99: 64.2}}}
	var out strings.Builder
	if err := writeChaos(&out, chaosReport{Results: []chaosResult{dropIn, stock}}); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"Where clusterpool's drop-in is behind Cluster API v1.14.2's ClusterCache", "+ 10 % + 0.5 s", ": 1.\n",
		"| reset | p50 | 11.7 s | 2.8 s | 3.6 s |\n",
		"clusterpool's drop-in 25.0 s, Cluster API v1.14.2's ClusterCache 17.0 s: the drop-in is slower by 8.0 s.",
	} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("report lacks %q:\n%s", want, out.String())
		}
	}
	out.Reset()
	if err := writeChaos(&out, chaosReport{Results: []chaosResult{dropIn}}); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(out.String(), "is behind") {
		t.Errorf("one cache, yet a behind list:\n%s", out.String())
	}
}

// The registry names each class once; every class applies, and a class
// with a length undoes what it applied (one without has nothing to undo);
// the schedule draws every class but those placed apart.
func TestFaultRegistry(t *testing.T) {
	seen := map[string]bool{}
	for _, c := range chaosClasses {
		if seen[c.Name] {
			t.Errorf("class %s registered twice", c.Name)
		}
		seen[c.Name] = true
		if c.Apply == nil {
			t.Errorf("class %s: no Apply", c.Name)
		}
		if (c.Max > 0) != (c.Undo != nil) || c.Min > c.Max {
			t.Errorf("class %s: length %s-%s, Undo set %v", c.Name, c.Min, c.Max, c.Undo != nil)
		}
		if got, err := classOf(c.Name); err != nil || got.Name != c.Name {
			t.Errorf("classOf(%s) = %v, %v", c.Name, got.Name, err)
		}
	}
	if _, err := classOf("no-such-class"); err == nil {
		t.Error("classOf of an unknown class: no error")
	}
	s := chaosSchedule(3, 30, 3, 20*time.Minute)
	for _, c := range chaosClasses {
		if n := count(s, c.Name); (c.Apart && n != 1) || (!c.Apart && n < 2) {
			t.Errorf("class %s (apart %v) drawn %d times", c.Name, c.Apart, n)
		}
	}
}

// The short run gates the drop-in only: the stock cache's violations,
// when it ran beside it, do not fail it.
func TestShortVerdictJudgesTheDropInOnly(t *testing.T) {
	stockBad := chaosResult{Cache: "stock", Verdicts: chaosVerdicts{Crossed: []protocol.Crossing{{Cluster: "c001"}}, Lingering: []string{"c030: 1 connection"}}}
	if err := shortVerdict(chaosReport{Results: []chaosResult{{Cache: "adapter"}, stockBad}}); err != nil {
		t.Fatalf("the stock cache's violations failed the short run: %v", err)
	}
	dropInBad := chaosResult{Cache: "adapter", Verdicts: chaosVerdicts{Hung: []protocol.HungCall{{Op: "Get"}}}}
	if err := shortVerdict(chaosReport{Results: []chaosResult{dropInBad, {Cache: "stock"}}}); err == nil {
		t.Fatal("the drop-in's violation did not fail the short run")
	}
}

// -chaos-short runs the drop-in alone unless -chaos-caches says, and
// refuses caches without it; the full run runs both.
func TestChaosCaches(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want []string
	}{
		{[]string{"-chaos-short"}, []string{"adapter"}},
		{[]string{"-chaos-short", "-chaos-caches", "adapter,stock"}, []string{"adapter", "stock"}},
		{[]string{"-chaos"}, []string{"adapter", "stock"}},
	} {
		o, err := parse(tc.args...)
		if err != nil || !slices.Equal(o.Caches, tc.want) {
			t.Errorf("%v: caches %v, %v; want %v", tc.args, o.Caches, err, tc.want)
		}
	}
	for _, args := range [][]string{{"-chaos-short", "-chaos-caches", "stock"}, {"-chaos", "-chaos-caches", "adapter,adapter"}, {"-chaos", "-chaos-caches", "before"}} {
		if _, err := parse(args...); err == nil {
			t.Errorf("%v: no error", args)
		}
	}
}

// parse is the driver's command line as far as a chaos run reads it.
func parse(args ...string) (*Options, error) {
	fs := flag.NewFlagSet("chaos", flag.ContinueOnError)
	o := Register(fs, fleet.Flags(fs))
	if err := fs.Parse(args); err != nil {
		return nil, err
	}
	return o, o.Defaults(fs)
}
