package scale

import (
	"math"
	"strings"
	"testing"

	"github.com/clusterpool/clusterpool/bench/peers/protocol"
)

func TestLeastSquaresAndFloorRatio(t *testing.T) {
	slope, icpt := leastSquares([]float64{100, 300, 1000}, []float64{1200, 3200, 10200})
	if math.Abs(slope-10) > 1e-9 || math.Abs(icpt-200) > 1e-6 {
		t.Fatalf("slope %v intercept %v, want 10 and 200", slope, icpt)
	}
	rs := []scaleResult{
		{Clusters: 100, Strategy: "floor", RSSBytes: 1000},
		{Clusters: 300, Strategy: "floor", RSSBytes: 3000},
		{Clusters: 100, Strategy: "peer", RSSBytes: 3000},
		{Clusters: 300, Strategy: "peer", RSSBytes: 7000},
		{Clusters: 100, Strategy: "cct", RSSBytes: 5000},
	}
	got := map[string]fit{}
	for _, f := range fits(rs) {
		if f.Figure == "rss_bytes" {
			got[f.Strategy] = f
		}
	}
	if got["peer"].Slope != 20 || got["peer"].FloorRatio != 2 {
		t.Fatalf("peer fit %+v, want slope 20 and 2× the floor", got["peer"])
	}
	if c := got["cct"]; !c.Single || c.Slope != 50 || c.FloorRatio != 5 {
		t.Fatalf("one-size fit %+v, want 50 per cluster (÷ N) and 5×", c)
	}
}

func TestCountEstablished(t *testing.T) {
	table := `  sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode
   0: 0100007F:9C40 0100007F:1F90 01 00000000:00000000 00:00000000 00000000     0        0 111 1 0 20 4 30 10 -1
   1: 0100007F:9C41 0100007F:1F90 01 00000000:00000000 00:00000000 00000000     0        0 112 1 0 20 4 30 10 -1
   2: 0100007F:9C42 0100007F:1F91 06 00000000:00000000 00:00000000 00000000     0        0 113 1 0 20 4 30 10 -1
   3: 0100007F:9C43 0100007F:1F91 01 00000000:00000000 00:00000000 00000000     0        0 999 1 0 20 4 30 10 -1
   4: 0100007F:9C44 0100007F:1F92 01 00000000:00000000 00:00000000 00000000     0        0 114 1 0 20 4 30 10 -1
`
	inodes := map[string]bool{"111": true, "112": true, "113": true, "114": true}
	counts := make([]int, 2)
	countEstablished(table, inodes, map[int]int{0x1F90: 0, 0x1F91: 1}, counts)
	// 1F90: two established of ours; 1F91: one in TIME_WAIT, one not ours;
	// 1F92 is no cluster's port.
	if counts[0] != 2 || counts[1] != 0 {
		t.Fatalf("counts %v, want [2 0]", counts)
	}
	if mean, lo, hi := connStats([]int{2, 0, 1}); mean != 1 || lo != 0 || hi != 2 {
		t.Fatalf("stats %v %v %v", mean, lo, hi)
	}
}

func TestSumCounter(t *testing.T) {
	text := `# TYPE apiserver_request_total counter
apiserver_request_total{code="200",verb="GET"} 12
apiserver_request_total{code="201",verb="POST"} 3.5
apiserver_request_total_other 100
apiserver_request_duration_seconds_count{verb="GET"} 7
`
	n, err := sumCounter(strings.NewReader(text), "apiserver_request_total")
	if err != nil || n != 15.5 {
		t.Fatalf("sum %v, %v; want 15.5", n, err)
	}
}

func TestMarkerWriter(t *testing.T) {
	var out strings.Builder
	var events []string
	on := map[string]func(){}
	for _, name := range []string{"start", "end", "faults"} {
		on[protocol.IdleMarker+name] = func() { events = append(events, name) }
	}
	m := &markerWriter{out: &out, on: on}
	for _, chunk := range []string{"log line\nbench-peers: idle st", "art\nmore\n", "bench-peers: idle end\nbench-peers: idle faults\n"} {
		m.Write([]byte(chunk))
	}
	if strings.Join(events, ",") != "start,end,faults" || out.String() != "log line\nmore\n" {
		t.Fatalf("events %v, passed through %q", events, out.String())
	}
}

func TestParseSizes(t *testing.T) {
	if s, err := parseSizes("100, 300,1000"); err != nil || len(s) != 3 || s[2] != 1000 {
		t.Fatalf("sizes %v, %v", s, err)
	}
	for _, bad := range []string{"300,100", "0", "x", "100,100"} {
		if _, err := parseSizes(bad); err == nil {
			t.Errorf("%q: no error", bad)
		}
	}
}

func TestWriteTargets(t *testing.T) {
	var rs []scaleResult
	for _, n := range []int{100, 300} {
		rs = append(rs,
			scaleResult{Clusters: n, Strategy: "floor", RSSBytes: int64(n) * 200 << 10, ConnectS: 1},
			scaleResult{Clusters: n, Strategy: "clusterpool", RSSBytes: int64(n) * 230 << 10, IdleCPUPerMin: float64(n) * 2e-3,
				IdleRequestsPerSec: float64(n) * 0.01, ConnectS: float64(n) / 100},
			scaleResult{Clusters: n, Strategy: "clustercache", RSSBytes: int64(n) * 800 << 10, IdleCPUPerMin: float64(n) * 5e-3,
				IdleRequestsPerSec: float64(n) * 0.1, ConnectS: 2})
	}
	rep := scaleReport{Options: scaleOptions{Sizes: []int{100, 300}}, Results: rs, Fits: fits(rs)}
	var out strings.Builder
	if err := writeScale(&out, rep); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"| RSS per cluster ≤ 1.2× the floor's | 230.0 KiB | 240.0 KiB (floor 200.0 KiB) | yes |",
		"| idle requests per cluster ≤ 0.02/s | 0.0100/s | 0.0200/s | yes |",
		"| idle CPU per cluster ≤ 0.5× ClusterCache's | 2.00 ms/min | 2.50 ms/min (clustercache 5.00 ms/min) | yes |",
		"| time to connect all 100 ≤ ClusterCache's | 1.0 s | 2.0 s | yes |",
		"| time to connect all 300 ≤ ClusterCache's | 3.0 s | 2.0 s | no |",
	} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("no row %s in\n%s", want, out.String())
		}
	}
	var none strings.Builder
	writeTargets(&none, scaleReport{Results: rs[:2], Fits: fits(rs[:2])})
	if !strings.Contains(none.String(), "1.2× the floor's") || strings.Contains(none.String(), "ClusterCache") {
		t.Errorf("without ClusterCache: %q, want only the floor's target", none.String())
	}
}

// The memory table fits each bucket over N, gives its difference from the
// floor's (the goroutines' beside the stacks), and "–" for a peer that
// does not report its memory classes.
func TestWriteMemory(t *testing.T) {
	// Per cluster, in KiB: the floor 100 live, 20 garbage, 30 headroom, 72
	// stacks (9 goroutines), 10 runtime, 2 outside; the peer 90, 40, 50, 96
	// (12 goroutines), 12, 2; each with 1 MiB more at N = 0.
	mem := func(n int, live, garbage, headroom, stacks, runtime, outside int64) (int64, int64, *protocol.Memory) {
		k := func(v int64) int64 { return v*int64(n)<<10 + 1<<20 }
		m := &protocol.Memory{ObjectsBytes: k(live) + k(garbage), HeadroomBytes: k(headroom), StacksBytes: k(stacks),
			RuntimeBytes: k(runtime), OutsideBytes: k(outside)}
		return k(live) + k(garbage) + k(headroom) + k(stacks) + k(runtime) + k(outside), k(live), m
	}
	var rs []scaleResult
	for _, n := range []int{100, 300, 1000} {
		fr, fh, fm := mem(n, 100, 20, 30, 72, 10, 2)
		pr, ph, pm := mem(n, 90, 40, 50, 96, 12, 2)
		rs = append(rs,
			scaleResult{Clusters: n, Strategy: "floor", RSSBytes: fr, HeapBytes: fh, Goroutines: 9 * n, Memory: fm},
			scaleResult{Clusters: n, Strategy: "clusterpool", RSSBytes: pr, HeapBytes: ph, Goroutines: 12*n + 70, Memory: pm},
			scaleResult{Clusters: n, Strategy: "old", RSSBytes: 300 * int64(n) << 10, HeapBytes: 100 * int64(n) << 10})
	}
	var out strings.Builder
	writeMemory(&out, scaleReport{Results: rs, Fits: fits(rs)})
	for _, want := range []string{
		"| peer | RSS | live objects | garbage | heap headroom | stacks (goroutines) | runtime | outside Go |",
		"| floor | 234.0 | 100.0 | 20.0 | 30.0 | 72.0 (9.00 goroutines) | 10.0 | 2.0 |",
		"| clusterpool | 290.0 (+56.0) | 90.0 (-10.0) | 40.0 (+20.0) | 50.0 (+20.0) | 96.0 (+24.0; +3.00 goroutines) | 12.0 (+2.0) | 2.0 (+0.0) |",
		"| old | 300.0 (+66.0) | 100.0 (+0.0) | – | – | – | – | – |",
	} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("no row %s in\n%s", want, out.String())
		}
	}
	var none strings.Builder
	writeMemory(&none, scaleReport{Results: rs[2:3], Fits: fits(rs[2:3])})
	if none.Len() != 0 {
		t.Errorf("without memory classes: %q, want no table", none.String())
	}
}
