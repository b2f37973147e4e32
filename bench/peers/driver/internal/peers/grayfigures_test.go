package peers

import (
	"context"
	"path/filepath"
	"strings"
	"testing"

	"github.com/clusterpool/clusterpool/bench/peers/driver/internal/fleet"
	"github.com/clusterpool/clusterpool/bench/peers/protocol"
)

func TestFoundAfter(t *testing.T) {
	for _, c := range []struct {
		name      string
		intervals [][2]int64
		want      float64
	}{
		{"none", nil, -1},
		{"only before the faults", [][2]int64{{500, 900}}, -1},
		{"at the start", [][2]int64{{1000, 2000}}, 0},
		{"the first after", [][2]int64{{500, 900}, {13_500, 20_000}, {40_000, 41_000}}, 12.5},
	} {
		if got := foundAfter(c.intervals, 1000); got != c.want {
			t.Errorf("%s: %v, want %v", c.name, got, c.want)
		}
	}
}

func TestPerFiveMinutes(t *testing.T) {
	for _, c := range []struct {
		name      string
		intervals [][2]int64
		window    float64
		want      float64
	}{
		{"none", nil, 150, 0},
		{"one in half of 5 min is two", [][2]int64{{2000, 3000}}, 150, 2},
		{"before the faults do not count", [][2]int64{{0, 900}, {2000, 3000}}, 300, 1},
		{"three in 10 min", [][2]int64{{1000, 1}, {5000, 1}, {9000, 1}}, 600, 1.5},
		{"no window", [][2]int64{{2000, 3000}}, 0, 0},
	} {
		if got := perFiveMinutes(c.intervals, 1000, c.window); got != c.want {
			t.Errorf("%s: %v, want %v", c.name, got, c.want)
		}
	}
}

func TestReachedShareAndWorstTime(t *testing.T) {
	for _, c := range []struct {
		reached, sent uint64
		want          float64
	}{{95, 100, 0.95}, {0, 0, -1}, {110, 100, 1.1}, {0, 10, 0}} {
		if got := reachedShare(c.reached, c.sent); got != c.want {
			t.Errorf("%d of %d: %v, want %v", c.reached, c.sent, got, c.want)
		}
	}
	for _, c := range []struct {
		times []float64
		want  float64
	}{{[]float64{3, 12, 7}, 12}, {[]float64{3, -1}, -1}} {
		if got := worstTime(c.times); got != c.want {
			t.Errorf("%v: %v, want %v", c.times, got, c.want)
		}
	}
}

// run returns a gray-phase run of strategy whose faults start at 100 s
// (Unix ms 100,000) and end 300 s later, with av and the clusters.
func run(strategy string, av *protocol.Availability, clusters ...grayCluster) grayRun {
	return grayRun{Strategy: strategy, Phase: "gray", FaultsFromUnixMs: 100_000, Clusters: clusters,
		Figures: protocol.Figures{StartUnixMs: 85_000, Seconds: 315, HealthyOKP99Ms: 115, HealthyPerSec: 25, Availability: av,
			RequestsSent: map[string]uint64{"h:1": 100, "h:2": 1000, "h:3": 50}}}
}

// figure finds one figure, failing the test if it is missing.
func figure(t *testing.T, figs []grayFigure, strategy, class, name string) grayFigure {
	t.Helper()
	for _, f := range figs {
		if f.Strategy == strategy && f.Class == class && f.Figure == name {
			return f
		}
	}
	t.Fatalf("no figure %s / %s / %s in %+v", strategy, class, name, figs)
	return grayFigure{}
}

// The bars: the healthy p99 ratio, the 60 %-error Cluster found (from its
// breaker for a strategy with one, else from its disconnect), and for
// throttled and 20 %-error Clusters the worst opens, disconnects and share
// of the class; a strategy without a breaker has n/a for opens.
func TestGrayFigures(t *testing.T) {
	pool := &protocol.Availability{
		BreakerOpen:  map[string][][2]int64{"e60": {{112_000, 117_000}}, "t1": {{150_000, 155_000}, {250_000, 255_000}}},
		NotConnected: map[string][][2]int64{"e60": {{112_100, 117_500}}, "t1": {{150_100, 155_500}}},
	}
	stock := &protocol.Availability{NotConnected: map[string][][2]int64{"t1": {{50_000, 60_000}}}} // before the faults
	clusters := []grayCluster{
		{Name: "e60", Class: fleet.GrayErrors60, Host: "h:1", Reached: 100},
		{Name: "t1", Class: fleet.GrayThrottled, Host: "h:2", Reached: 990},
		{Name: "t2", Class: fleet.GrayThrottled, Host: "h:3", Reached: 40},
	}
	base := grayRun{Strategy: "clusterpool", Phase: "baseline", Figures: protocol.Figures{HealthyOKP99Ms: 100, HealthyPerSec: 50}}
	stockBase := grayRun{Strategy: "clustercache", Phase: "baseline", Figures: protocol.Figures{HealthyOKP99Ms: 120}}
	figs := grayFigures([]string{"clusterpool", "clustercache", "absent"},
		[]grayRun{base, run("clusterpool", pool, clusters...), stockBase, run("clustercache", stock, clusters...)})

	for _, c := range []struct {
		strategy, class, name string
		value                 float64
		verdict               string
	}{
		{"clusterpool", "healthy", figP99Ratio, 1.15, verdictNotMet},
		{"clusterpool", "healthy", figRate, 0.5, ""}, // 25 of 50 a second, no bar
		{"clustercache", "healthy", figRate, -1, ""}, // none in the baseline
		{"clustercache", "healthy", figP99Ratio, 115.0 / 120, verdictMet},
		{"clusterpool", "errors-60", figFound, 12, verdictMet},
		{"clustercache", "errors-60", figFound, -1, verdictNotMet},
		{"clusterpool", "throttled", figOpens, 2, verdictNotMet},
		{"clusterpool", "throttled", figCuts, 1, verdictMet},
		{"clusterpool", "throttled", figShare, 0.8, verdictNotMet}, // t2: 40 of 50
		{"clustercache", "throttled", figOpens, -1, verdictNA},
		{"clustercache", "throttled", figCuts, 0, verdictMet},
		{"clusterpool", "errors-60", figOpens, 1, ""}, // no bar
	} {
		f := figure(t, figs, c.strategy, c.class, c.name)
		if f.Value != c.value || f.Verdict != c.verdict {
			t.Errorf("%s %s %s: %v %q, want %v %q", c.strategy, c.class, c.name, f.Value, f.Verdict, c.value, c.verdict)
		}
	}
	for _, f := range figs {
		if f.Strategy == "absent" || f.Class == string(fleet.GraySlow) {
			t.Errorf("a figure of a strategy or class that did not run: %+v", f)
		}
	}
	var b strings.Builder
	rep := grayReport{Strategies: []string{"clusterpool", "clustercache"}, Figures: figs, Runs: []grayRun{run("clusterpool", pool, clusters...)}}
	if err := writeGray(&b, rep); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"| healthy | healthy ok p99, gray ÷ baseline | ≤ 1.10 | 1.150 **NOT met** | 0.958 met |",
		"| errors-60 | found after s | ≤ 30 s | 12.0 met | never **NOT met** |",
		"| throttled | breaker opens per 5 min | ≤ 1 | 2.0 **NOT met** | n/a |",
		"| throttled | share of requests sent that reached it | ≥ 95 % | 80.0 % **NOT met** | 80.0 % **NOT met** |",
		"n/a — clustercache: " + noBreakerWhy,
		"| clusterpool  | gray | 25.0 | 0 | 0 | 0 | 1150 / 1130 (0) |",
	} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("report lacks %q:\n%s", want, b.String())
		}
	}
}

// -gray-from runs no peer: Run computes the figures of the file's runs
// again (not the ones stored in it) and prints the report.
func TestGrayFromRecomputes(t *testing.T) {
	stored := grayReport{Strategies: []string{"clusterpool"}, Runs: []grayRun{
		{Strategy: "clusterpool", Phase: "baseline", Figures: protocol.Figures{HealthyOKP99Ms: 100, HealthyPerSec: 10}},
		{Strategy: "clusterpool", Phase: "gray", Figures: protocol.Figures{HealthyOKP99Ms: 105, HealthyPerSec: 10}},
	}, Figures: []grayFigure{{Strategy: "clusterpool", Class: "healthy", Figure: "stale"}}}
	file := filepath.Join(t.TempDir(), "gray.json")
	if err := fleet.WriteJSON(file, stored); err != nil {
		t.Fatal(err)
	}
	o, err := parse("-gray-from", file)
	if err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	o.Out = &b
	if err := Run(context.Background(), o); err != nil {
		t.Fatal(err)
	}
	if s := b.String(); !strings.Contains(s, "| healthy | healthy ok p99, gray ÷ baseline | ≤ 1.10 | 1.050 met |") || strings.Contains(s, "stale") {
		t.Fatalf("report:\n%s", s)
	}
}
