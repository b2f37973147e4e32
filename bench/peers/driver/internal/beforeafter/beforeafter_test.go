package beforeafter

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/clusterpool/clusterpool/bench/peers/driver/internal/fleet"
	"github.com/clusterpool/clusterpool/bench/peers/driver/internal/mhc"
	"github.com/clusterpool/clusterpool/bench/peers/driver/internal/peers"
	"github.com/clusterpool/clusterpool/bench/peers/protocol"
)

func TestVerdict(t *testing.T) {
	nan := math.NaN()
	for _, tc := range []struct {
		before, after float64
		higher        bool
		want          string
	}{
		{100, 104, false, "unchanged"},
		{100, 106, false, "worse"},
		{100, 94, false, "better"},
		{100, 94, true, "worse"},
		{0, 0, false, "unchanged"},
		{0, 1, false, "worse"},
		{-10, -20, false, "better"},
		{nan, nan, false, "unchanged"},
		{nan, 5, false, "better"},
		{5, nan, true, "worse"},
	} {
		if got := verdict(tc.before, tc.after, tc.higher); got != tc.want {
			t.Errorf("verdict(%v, %v, higher %v) = %s, want %s", tc.before, tc.after, tc.higher, got, tc.want)
		}
	}
}

// benchOutput is go test -bench output with the given ns/op of the
// serial clusterpool and sync.Map hits, and an allocating rejection.
func benchOutput(clusterpool, syncmap string) string {
	return "goos: linux\npkg: github.com/clusterpool/clusterpool/bench\n" +
		"BenchmarkHit/mode=serial/impl=syncmap-2   \t1000\t" + syncmap + " ns/op\t0 B/op\t0 allocs/op\n" +
		"BenchmarkHit/mode=serial/impl=clusterpool-2\t1000\t" + clusterpool + " ns/op\t0 B/op\t0 allocs/op\n" +
		"BenchmarkOpenRejection/impl=clusterpool-2\t1000\t90 ns/op\t16 B/op\t1 allocs/op\nPASS\n"
}

const soakOutput = "=== RUN   TestSoak\n    soak_test.go:224: soak 1s: 10000 clusters, 200 workers: %s Gets/s (66588 Gets, 53.2%% hits, 35620 with a client), 13754 dials; wait p99 %s, max 18.886048ms (of 31190 waits), worker sleeps late by up to 15.192574ms; heap 649 B per cluster; 88 pool goroutines at the end (dials running; queued dials have none), 0 after Close\n--- %s: TestSoak (1.06s)\n"

func writeFiles(t *testing.T, dir string, files map[string]string) {
	t.Helper()
	for name, text := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

func jsonText(t *testing.T, v any) string {
	t.Helper()
	data, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(data)
}

func TestBeforeAfterReport(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "before-after")
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	peer := func(strategy string, p99 float64, all float64) peers.Result {
		return peers.Result{Scenario: "dead", Strategy: strategy, Figures: protocol.Figures{P99Ms: p99, AllReconciled: all, HealthyPerSec: 10}}
	}
	mhcRun := func(cache string, errs int) mhc.Result {
		return mhc.Result{Cache: cache, Machines: 1, Roles: map[string]string{"c1": "healthy"}, Figures: protocol.MHCFigures{ReconcileErrors: errs}}
	}
	writeFiles(t, dir, map[string]string{
		"bench-before.txt":  benchOutput("40", "20") + benchOutput("44", "20") + benchOutput("42", "20"),
		"bench-after.txt":   benchOutput("30", "20") + benchOutput("30", "20") + benchOutput("31", "20"),
		"soak-1-before.txt": fmt.Sprintf(soakOutput, "1000", "4ms", "PASS"),
		"soak-2-after.txt":  fmt.Sprintf(soakOutput, "900", "2ms", "PASS"),
		"soak-3-after.txt":  fmt.Sprintf(soakOutput, "1", "1s", "FAIL"),
		"peers.json":        jsonText(t, peers.Report{Results: []peers.Result{peer("clustercache", 1, 5), peer("clusterpool", 200, -1), peer("before", 100, 7)}}),
		"trees.txt":         "before 1bc0d5e\nafter HEAD with changes\n",
		"mhc.json":          jsonText(t, mhc.Report{Results: []mhc.Result{mhcRun("stock", 9), mhcRun("adapter", 3), mhcRun("before", 4), mhcRun("before", 6), mhcRun("adapter", 5)}}),
	})
	jsonFile := filepath.Join(t.TempDir(), "ba.json")
	var out bytes.Buffer
	o := &Options{Shared: &fleet.Shared{JSONOut: jsonFile, Out: &out}, Dir: dir}
	if err := Run(context.Background(), o); err != nil {
		t.Fatal(err)
	}
	md := out.String()
	for _, want := range []string{
		"Before: 1bc0d5e. After: HEAD with changes.",
		"| BenchmarkHit/mode=serial/impl=clusterpool, ns/op | 42.0 | 30.0 | 0.71× | better |",
		"| BenchmarkHit/mode=serial/impl=syncmap, ns/op | 20.0 | 20.0 | 1.00× | info |",
		"| BenchmarkHit/mode=serial/clusterpool ÷ syncmap, ns/op | 2.10 | 1.50 | 0.71× | better |",
		"| BenchmarkOpenRejection/impl=clusterpool, allocs/op | 1.0 | 1.0 | 1.00× | unchanged |",
		"in the order before, after, after;",
		"| Gets/s | 1000 | 900 | 0.90× | **worse** |",
		"| wait p99, ms | 4.00 | 2.00 | 0.50× | better |",
		"| runs that failed | 0 | 1 | – | **worse** |",
		"| dead: p99 ms | 100 | 200 | 2.00× | **worse** |",
		"| dead: all reconciled, s | 7.0 | not reached | – | **worse** |",
		"| reconcile errors logged (MachineHealthCheck) | 5 | 4 | 0.80× | better |",
		"- make bench-peers: dead: p99 ms\n",
		"[bench-before.txt](before-after/bench-before.txt)",
	} {
		if !strings.Contains(md, want) {
			t.Errorf("report lacks %q:\n%s", want, md)
		}
	}
	data, err := os.ReadFile(jsonFile)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(data), `"after": null`) {
		t.Errorf("a figure never reached is not null in the JSON:\n%s", data)
	}
}

// A bar whose raw output is missing says so instead of failing the report.
func TestBeforeAfterMissing(t *testing.T) {
	var out bytes.Buffer
	if err := Run(context.Background(), &Options{Shared: &fleet.Shared{Out: &out}, Dir: t.TempDir()}); err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(out.String(), "No figures: not run."); n != len(baSources) {
		t.Fatalf("%d bars not run, want %d:\n%s", n, len(baSources), out.String())
	}
}
