package main

import (
	"context"
	"flag"
	"os"
	"strings"
	"testing"

	"go.uber.org/goleak"

	"github.com/clusterpool/clusterpool/bench/sim"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

var (
	opts  options
	whole = flag.Bool("table", false, "run the whole table in virtual time to stdout (make bench-scenarios); "+
		"without it, the test checks the herd's rows only")
)

func init() { opts.register(flag.CommandLine) }

// TestScenarios is `make bench-scenarios` (with -table): the table in
// virtual time, every run in its own synctest bubble (sim.RunVirtual).
// Without -table it runs the herd only and checks that the table holds
// its three rows and headlines.
func TestScenarios(t *testing.T) {
	o := opts
	o.cfg.Scale = 1
	run := func(sc sim.Scenario, s string) (sim.Result, error) { return sim.RunVirtual(t, sc, s, o.cfg) }
	const clock = "Virtual time (synctest: durations exact, code takes no time)"
	if *whole {
		if err := o.table(context.Background(), os.Stdout, clock, run); err != nil {
			t.Fatal(err)
		}
		return
	}
	o.only, o.jsonOut, o.mdOut = "^1-herd$", "", ""
	var b strings.Builder
	if err := o.table(context.Background(), &b, clock, run); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{clock, "| 1-herd | cct | 100 |", "| 1-herd | clustercache | 100 |", "| 1-herd | clusterpool | 100 |",
		"- 1-herd: every object reconciled after"} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("the table lacks %q:\n%s", want, b.String())
		}
	}
	if strings.Contains(b.String(), "MinScale") {
		t.Errorf("a virtual run reports a scale:\n%s", b.String())
	}
}
