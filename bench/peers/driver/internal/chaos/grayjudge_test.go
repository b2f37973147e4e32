package chaos

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/clusterpool/clusterpool/bench/peers/protocol"
)

// grayEvent is fault id of class on cluster from start to end (seconds).
func grayEvent(id int, class, cluster string, start, end float64) faultEvent {
	return faultEvent{fault: fault{ID: id, Class: class}, Start: start, End: end, Clusters: []string{cluster}}
}

// A throttled or 20 %-error cluster cut more than once per started 5
// minutes of its fault is cut off (a violation); once, or a cut outside
// the fault, or on a slow cluster, is not; a fault that another one on
// the same cluster overlaps, or follows within grayQuiet, is not judged.
func TestGrayCutOff(t *testing.T) {
	for _, tc := range []struct {
		name        string
		events      []faultEvent
		cuts        []float64
		judged, cut int
		cutOff      bool
	}{
		{"throttled, cut twice in 60 s", []faultEvent{grayEvent(0, faultThrottled, "c001", 100, 160)}, []float64{110, 150}, 1, 2, true},
		{"errors-20, cut twice in 60 s", []faultEvent{grayEvent(0, faultErrors20, "c001", 100, 160)}, []float64{110, 150}, 1, 2, true},
		{"throttled, cut once", []faultEvent{grayEvent(0, faultThrottled, "c001", 100, 160)}, []float64{110}, 1, 1, false},
		{"throttled, cuts before and after it", []faultEvent{grayEvent(0, faultThrottled, "c001", 100, 160)}, []float64{90, 161}, 1, 0, false},
		{"throttled, twice in two faults of 200 s (2 allowed)", []faultEvent{grayEvent(0, faultThrottled, "c001", 0, 200),
			grayEvent(1, faultThrottled, "c001", 300, 500)}, []float64{10, 310}, 2, 2, false},
		{"throttled, three times in two faults of 200 s", []faultEvent{grayEvent(0, faultThrottled, "c001", 0, 200),
			grayEvent(1, faultThrottled, "c001", 300, 500)}, []float64{10, 20, 310}, 2, 3, true},
		{"slow, cut twice (no bar)", []faultEvent{grayEvent(0, faultSlow, "c001", 100, 160)}, []float64{110, 150}, 1, 2, false},
		{"throttled, after a black hole on it", []faultEvent{grayEvent(0, faultBlackhole, "c001", 40, 80),
			grayEvent(1, faultThrottled, "c001", 100, 160)}, []float64{110, 150}, 0, 0, false},
		{"throttled, during a manager kill", []faultEvent{grayEvent(1, faultThrottled, "c001", 100, 160),
			{fault: fault{ID: 2, Class: faultManagerKill}, Start: 120, End: 120, Clusters: []string{"c000", "c001"}}}, []float64{121, 150}, 0, 0, false},
		{"throttled, a black hole on another cluster", []faultEvent{grayEvent(0, faultBlackhole, "c002", 90, 120),
			grayEvent(1, faultThrottled, "c001", 100, 160)}, []float64{110, 150}, 1, 2, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			gray := grayTable(tc.events, map[string][]float64{"c001": tc.cuts})
			var judged, cut int
			for _, g := range gray {
				judged, cut = judged+g.Judged, cut+g.Cuts
			}
			v := chaosVerdicts{CutOff: cutOffOf(gray)}
			if judged != tc.judged || cut != tc.cut || (len(v.CutOff) > 0) != tc.cutOff {
				t.Fatalf("judged %d, cuts %d, cut off %v; want %d, %d, %v (%+v)", judged, cut, v.CutOff, tc.judged, tc.cut, tc.cutOff, gray)
			}
			err := shortVerdict(chaosReport{Results: []chaosResult{{Cache: "adapter", Verdicts: v}}})
			if (err != nil) != tc.cutOff || (err != nil && !strings.Contains(err.Error(), "cut off: c001")) {
				t.Fatalf("short run's verdict %v, want a failure %v", err, tc.cutOff)
			}
		})
	}
}

// A 60 %-error cluster is found when it is cut within 30 s of its fault's
// start: at 29 s it is, at 31 s (or never) it is not.
func TestGrayFound(t *testing.T) {
	for _, tc := range []struct {
		cut      []float64
		found    int
		foundMax float64
	}{{[]float64{129}, 1, 29}, {[]float64{131}, 0, -1}, {nil, 0, -1}, {[]float64{95, 131}, 0, -1}} {
		gray := grayTable([]faultEvent{grayEvent(0, faultErrors60, "c001", 100, 150)}, map[string][]float64{"c001": tc.cut})
		if len(gray) != 1 || gray[0].Class != faultErrors60 || gray[0].Judged != 1 || gray[0].Found != tc.found || gray[0].FoundMax != tc.foundMax {
			t.Errorf("cut at %v: %+v, want found %d, latest %v", tc.cut, gray, tc.found, tc.foundMax)
		}
		if v := cutOffOf(gray); len(v) != 0 {
			t.Errorf("cut at %v: errors-60 cut off %v (it has no such bar)", tc.cut, v)
		}
	}
}

// The report has a gray table with each class's bar, and the cut-off
// verdict row.
func TestGrayReport(t *testing.T) {
	res := chaosResult{Cache: "adapter", Verdicts: chaosVerdicts{CutOff: []string{"c001: throttled, 2 cuts in 60 s of fault"}},
		Gray: []grayStats{{Class: faultThrottled, Judged: 1, Seconds: 60, Cuts: 2, CutOff: []string{"c001: throttled, 2 cuts in 60 s of fault"}, FoundMax: -1},
			{Class: faultErrors60, Judged: 2, Seconds: 90, Cuts: 1, Found: 1, FoundMax: 12.5}}}
	var b strings.Builder
	writeGray(&b, []chaosResult{res})
	out := b.String()
	for _, want := range []string{"| throttled | 1 (0) | 60 | 2 | **1**: c001: throttled, 2 cuts in 60 s of fault cut off |",
		"| errors-60 | 2 (0) | 90 | 1 | found 1 of 2, latest 12.5 s |", "| slow | 0 (0) | 0 | 0 | – |"} {
		if !strings.Contains(out, want) {
			t.Errorf("the gray table lacks %q:\n%s", want, out)
		}
	}
}

// The trace records a cut when a sample no longer shows connected a
// cluster that the previous one did, and only then.
func TestTraceCuts(t *testing.T) {
	t0 := time.UnixMilli(1_000_000)
	tr := newChaosTrace(func() []string { return []string{"c000", "c001"} })
	for i, connected := range [][]string{{"c000"}, {"c000", "c001"}, {"c000", "c001"}, {"c001"}, {}, {"c000", "c001"}} {
		tr.add(procSample{ChaosSample: protocol.ChaosSample{UnixMs: t0.UnixMilli() + int64(i)*1000, Connected: connected}})
	}
	got := tr.cutsSince(t0)
	if !slices.Equal(got["c000"], []float64{3}) || !slices.Equal(got["c001"], []float64{4}) || len(got) != 2 {
		t.Fatalf("cuts %v, want c000 at 3 s, c001 at 4 s", got)
	}
}

// The schedule draws every gray class, on a Cluster, and a 60 %-error
// fault lasts at least foundWithin (a cache can find it while it is on).
func TestGrayClassesScheduled(t *testing.T) {
	s := chaosSchedule(5, 30, 3, time.Hour)
	for _, class := range []string{faultSlow, faultErrors20, faultErrors60, faultThrottled} {
		c, err := classOf(class)
		if err != nil || !c.Gray || c.Apart || c.Target != targetCluster {
			t.Fatalf("class %s: %+v, %v; want a gray class drawn on a Cluster", class, c, err)
		}
		if n := count(s, class); n < 2 {
			t.Errorf("class %s drawn %d times in an hour", class, n)
		}
	}
	for _, f := range s {
		if f.Class == faultErrors60 && f.Length < foundWithin {
			t.Errorf("fault %+v shorter than %s", f, foundWithin)
		}
	}
}
