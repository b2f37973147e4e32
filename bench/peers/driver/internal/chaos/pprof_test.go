package chaos

import (
	"bytes"
	"context"
	"runtime/pprof"
	"strings"
	"sync"
	"testing"
)

// parseGoroutines counts a real goroutine profile: the goroutines labelled
// goroutineLabel by Cluster name (also those their labelled goroutines
// started), and every goroutine by stack.
func TestParseGoroutines(t *testing.T) {
	release, parked := make(chan struct{}), make(chan struct{})
	var wg sync.WaitGroup
	park := func(n int) {
		for range n {
			wg.Go(func() { parked <- struct{}{}; <-release })
		}
	}
	pprof.Do(context.Background(), pprof.Labels(goroutineLabel, "fleet/c001"), func(context.Context) {
		park(2)
		wg.Go(func() { park(1); parked <- struct{}{}; <-release }) // its child inherits the label
	})
	pprof.Do(context.Background(), pprof.Labels(goroutineLabel, "fleet/c002", "other", "x"), func(context.Context) { park(1) })
	pprof.Do(context.Background(), pprof.Labels("other", "fleet/c003"), func(context.Context) { park(1) })
	for range 6 {
		<-parked
	}
	var b bytes.Buffer
	err := pprof.Lookup("goroutine").WriteTo(&b, 1)
	close(release)
	wg.Wait()
	if err != nil {
		t.Fatal(err)
	}
	p, err := parseGoroutines(b.String())
	if err != nil {
		t.Fatal(err)
	}
	if p.ByCluster["c001"] != 4 || p.ByCluster["c002"] != 1 || len(p.ByCluster) != 2 {
		t.Fatalf("labelled goroutines by Cluster %v, want c001: 4, c002: 1", p.ByCluster)
	}
	ours, all := 0, 0
	for stack, n := range p.Stacks {
		all += n
		if strings.Contains(stack, "TestParseGoroutines") {
			ours += n
		}
	}
	if all != p.Total || ours < 6 || p.mostPerCluster() != 4 {
		t.Fatalf("%d goroutines by stack, total %d, %d parked by the test (want 6 at least), most per Cluster %d", all, p.Total, ours, p.mostPerCluster())
	}
	if _, err := parseGoroutines("not a profile\n"); err == nil {
		t.Fatal("a non-profile parsed")
	}
}

// grown lists the stacks that grew, most first.
func TestGrown(t *testing.T) {
	base := goroutineProfile{Stacks: map[string]int{"a": 10, "b": 5, "c": 3}}
	end := goroutineProfile{Stacks: map[string]int{"a": 12, "b": 5, "c": 1, "d": 7}}
	got := grown(base, end, 5)
	if len(got) != 2 || got[0] != (stackGrowth{Baseline: 0, End: 7, Stack: "d"}) || got[1] != (stackGrowth{Baseline: 10, End: 12, Stack: "a"}) {
		t.Fatalf("grown %+v, want d (0 → 7), then a (10 → 12)", got)
	}
	if got := grown(base, end, 1); len(got) != 1 || got[0].Stack != "d" {
		t.Fatalf("the first one: %+v", got)
	}
}

// A deleted Cluster keeps no labelled goroutine; a live one of the same
// name (re-created) fewer than twice the most of one at the baseline.
func TestLabelledLeft(t *testing.T) {
	for _, tc := range []struct {
		n, baseMost int
		live, left  bool
	}{
		{0, 0, false, false},
		{1, 5, false, true},
		{9, 5, true, false},
		{10, 5, true, true},
		{1, 0, true, false},
		{2, 0, true, true},
	} {
		if got := labelledLeft("c001", tc.n, tc.live, tc.baseMost); (got != "") != tc.left {
			t.Errorf("%d goroutines, live %v, baseline most %d: %q, want left %v", tc.n, tc.live, tc.baseMost, got, tc.left)
		}
	}
}

// A run that leaked lists the stacks that grew; one whose profiles failed
// says why.
func TestWriteGrown(t *testing.T) {
	leaked := chaosVerdicts{Leaked: []string{"goroutines 30 > 22"}, Grown: []stackGrowth{{Baseline: 1, End: 9, Stack: "a < b < c < d < e"}}}
	var b strings.Builder
	writeGrown(&b, chaosResult{Cache: "adapter", Verdicts: leaked})
	if !strings.Contains(b.String(), "- 1 → 9: a < b < c < d\n") {
		t.Fatalf("leaked run: %q", b.String())
	}
	b.Reset()
	writeGrown(&b, chaosResult{Cache: "adapter", Verdicts: chaosVerdicts{Grown: leaked.Grown, ProfileError: "boom"}})
	if got := b.String(); strings.Contains(got, "grew") || !strings.Contains(got, "no goroutine profiles: boom") {
		t.Fatalf("run without a leak, profiles failed: %q", got)
	}
}
