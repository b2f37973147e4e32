package scale

import (
	"bufio"
	"errors"
	"io"
	"net"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/clusterpool/clusterpool/bench/peers/driver/internal/fleet"
	"github.com/clusterpool/clusterpool/bench/peers/protocol"
	"github.com/clusterpool/clusterpool/internal/faultproxy"
)

// A killed cluster's detection is the first not-connected report at or
// after its fault; one open across the fault counts from the fault.
func TestDetections(t *testing.T) {
	av := &protocol.Availability{
		FirstConnectedUnixMs: map[string]int64{"a": 1, "b": 1, "c": 1, "d": 1},
		NotConnected: map[string][][2]int64{
			"a": {{500, 600}, {10_000, 12_000}}, // a blip before the fault, then the fault
			"b": {{900, 20_000}},                // down across the fault
			"d": {{100, 200}},                   // only before the fault
		},
	}
	faults := []injected{{"a", faultHang, 1000}, {"b", faultKill, 1000}, {"c", faultPartition, 1000}, {"d", faultKill, 1000}, {"e", faultKill, 1000}}
	got := detections(faults, av)
	want := []detection{
		{Cluster: "a", Fault: faultHang, FaultUnixMs: 1000, DetectS: 9},
		{Cluster: "b", Fault: faultKill, FaultUnixMs: 1000, DetectS: 0},
		{Cluster: "c", Fault: faultPartition, FaultUnixMs: 1000, DetectS: -1, Note: "never reported"},
		{Cluster: "d", Fault: faultKill, FaultUnixMs: 1000, DetectS: -1, Note: "never reported"},
		{Cluster: "e", Fault: faultKill, FaultUnixMs: 1000, DetectS: -1, Note: "not connected before the fault"},
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("%d: %+v, want %+v", i, got[i], want[i])
		}
	}
	if d := detections(faults[:1], nil); d[0].DetectS != -1 || d[0].Note != "no samples" {
		t.Errorf("without samples: %+v", d[0])
	}
}

func TestDetectCell(t *testing.T) {
	ds := func(times ...float64) []detection {
		var out []detection
		for _, s := range times {
			out = append(out, detection{DetectS: s})
		}
		return out
	}
	for _, c := range []struct {
		ds   []detection
		want string
	}{
		{ds(3, 1, 2), "2.0 / 3.0"},
		{ds(3, -1, 1), "3.0 / never (1 of 3 never)"},
		{ds(-1, -1, 1), "never / never (2 of 3 never)"},
		{nil, ""},
	} {
		if got := detectCell(c.ds); got != c.want {
			t.Errorf("%v: %q, want %q", c.ds, got, c.want)
		}
	}
}

// The detection table and targets compare each cluster with ClusterCache's
// report of the same cluster and fault at the same size.
func TestDetectionTableAndTargets(t *testing.T) {
	run := func(s string, n int, hang, kill []float64) scaleResult {
		r := scaleResult{Strategy: s, Clusters: n}
		for i, d := range hang {
			r.Detections = append(r.Detections, detection{Cluster: string(rune('a' + i)), Fault: faultHang, DetectS: d})
		}
		for i, d := range kill {
			r.Detections = append(r.Detections, detection{Cluster: string(rune('x' + i)), Fault: faultKill, DetectS: d})
		}
		return r
	}
	rep := scaleReport{Options: scaleOptions{Sizes: []int{100, 1000}, PerFault: 2, DetectWithin: time.Minute}, Results: []scaleResult{
		run("clusterpool", 100, []float64{20, 25}, []float64{10, 50}),
		run("clustercache", 100, []float64{50, 60}, []float64{40, 45}), // x: 10 ≤ 40; y: 50 > 45
		run("clusterpool", 1000, []float64{30, -1}, nil),
		run("clustercache", 1000, []float64{55, -1}, nil), // b: neither reported
	}}
	var b strings.Builder
	writeDetection(&b, rep)
	writeTargets(&b, rep)
	for _, want := range []string{
		"| clusters | fault | clusterpool | clustercache |",
		"| 100 | apiserver SIGSTOPped (hangs) | 25.0 / 25.0 | 60.0 / 60.0 |",
		"| 100 | apiserver process killed | 50.0 / 50.0 | 45.0 / 45.0 |",
		"| 1000 | apiserver SIGSTOPped (hangs) | never / never (1 of 2 never) | never / never (1 of 2 never) |",
		"ClusterCache: apiserver SIGSTOPped (hangs) (4, all sizes; p50 / max s) | 30.0 / never (1 of 4 never) | 60.0 / never (1 of 4 never) | no |",
		"ClusterCache: apiserver process killed (2, all sizes; p50 / max s) | 50.0 / 50.0 | 45.0 / 45.0 | no |",
	} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("no %q in\n%s", want, b.String())
		}
	}
	if strings.Contains(b.String(), "| 1000 | apiserver process killed") {
		t.Errorf("a row without detections:\n%s", b.String())
	}
	rep.Results[2].Detections[1].DetectS = 59 // clusterpool reports b, ClusterCache never does
	rep.Results[1].Detections[3].DetectS = 50 // y: 50 ≤ 50
	b.Reset()
	writeTargets(&b, rep)
	if strings.Count(b.String(), "ClusterCache: ") != 2 || strings.Count(b.String(), "| no |") != 0 {
		t.Errorf("want both detection targets met:\n%s", b.String())
	}
}

// Peers and sizes that do not fit the machine are skipped with the reason.
func TestScaleLimits(t *testing.T) {
	avail := int64(10 << 30)
	l := &scaleLimits{fds: 20000, memAvailable: func() int64 { return avail }, fleetRSS: func() int64 { return 0 },
		peak: map[string]float64{}, conns: map[string]int{}, stopped: map[string]string{}}
	o := scaleOptions{CCTMax: 1000, PeerMax: 1000, Extra: map[string]string{"before": "bin"}}
	for _, s := range []string{"floor", "clusterpool", "cct", "before"} {
		if r := l.peerFits(s, 1000, o); r != "" {
			t.Fatalf("%s at 1000, nothing measured: %s", s, r)
		}
	}
	if r := l.peerFits("cct", 3000, o); !strings.Contains(r, "-cct-max") {
		t.Errorf("cct at 3000: %q", r)
	}
	if r := l.peerFits("before", 3000, o); !strings.Contains(r, "-peer-max") {
		t.Errorf("before at 3000: %q", r)
	}
	if r := l.peerFits("floor", 20000, o); !strings.HasPrefix(r, "file descriptors") {
		t.Errorf("floor at 20000: %q", r)
	}
	l.ran(scaleResult{Strategy: "clustercache", Clusters: 1000, PeakRSSBytes: 1000 << 20, ConnsMax: 1, ConnectS: 9})
	l.ran(scaleResult{Strategy: "floor", Clusters: 1000, PeakRSSBytes: 250 << 20, ConnsMax: 1, ConnectS: 5})
	l.ran(scaleResult{Strategy: "clusterpool", Clusters: 1000, PeakRSSBytes: 300 << 20, ConnsMax: 1, ConnectS: -1})
	// 1 MiB per cluster × 1.25 at 10,000: 12.2 GiB; 9 GiB available.
	if r := l.peerFits("clustercache", 10000, o); !strings.HasPrefix(r, "memory") {
		t.Errorf("clustercache at 10000: %q", r)
	}
	if r := l.peerFits("clustercache", 3000, o); r != "" {
		t.Errorf("clustercache at 3000: %q", r)
	}
	if r := l.peerFits("clusterpool", 3000, o); !strings.HasPrefix(r, "time") {
		t.Errorf("clusterpool after not connecting all: %q", r)
	}
	if r := l.fleetFits(10000, 1000); r != "" {
		t.Errorf("fleet to 10000: %q", r)
	}
	avail = 2 << 30 // floor at 3000: 0.9 GiB with its margin; 1 GiB available
	if r := l.fleetFits(3000, 1000); r != "" {
		t.Errorf("fleet to 3000: %q", r)
	}
	l.fleetRSS = func() int64 { return 1 << 30 }
	l.fleetGrown(1000)
	l.fleetRSS = func() int64 { return 2 << 30 }
	l.fleetGrown(2000) // 1 GiB per 1,000 Clusters
	if r := l.fleetFits(3000, 2000); !strings.HasPrefix(r, "memory") {
		t.Errorf("fleet to 3000 growing 1 GiB per 1,000: %q", r)
	}
	l.failed("floor", errors.New("boom"))
	if r := l.peerFits("floor", 100, o); !strings.Contains(r, "boom") {
		t.Errorf("floor after failing: %q", r)
	}
}

// A proxy host creates proxies, switches them and counts their
// connections over its line protocol; the end of its input closes them.
func TestProxyHost(t *testing.T) {
	target := echoServer(t)
	ph, h := pipeProxyHost()
	var refs []proxyRef
	var addrs []string
	for range 2 {
		r, addr, err := ph.add(target)
		if err != nil {
			t.Fatal(err)
		}
		refs, addrs = append(refs, r), append(addrs, addr)
	}
	if _, _, err := ph.add("192.0.2.1:80"); err == nil || !strings.Contains(err.Error(), "loopback") {
		t.Fatalf("a proxy off loopback: %v", err)
	}
	if err := echo(addrs[1], time.Second); err != nil {
		t.Fatal(err)
	}
	if got, err := ph.accepted(refs); err != nil || got[0] != 0 || got[1] != 1 {
		t.Fatalf("accepted %v, %v; want [0 1]", got, err)
	}
	if err := refs[1].host.setMode(refs[1].i, faultproxy.Blackhole); err != nil {
		t.Fatal(err)
	}
	if err := echo(addrs[1], 200*time.Millisecond); err == nil {
		t.Fatal("a black-holed proxy answered")
	}
	for _, bad := range []string{"mode 2 pass", "mode 0 sideways", "jump"} {
		if _, err := h.call(bad); err == nil {
			t.Errorf("%q: no error", bad)
		}
	}
	ph.close()
	if _, err := net.DialTimeout("tcp", addrs[0], time.Second); err == nil {
		t.Fatal("a proxy still listens after its host ended")
	}
}

// pipeProxyHost serves a proxy host in this process, over pipes.
func pipeProxyHost() (*proxyHosts, *proxyHost) {
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	served := make(chan int)
	go func() { served <- ServeProxyHost(inR, outW); outW.Close() }()
	h := &proxyHost{in: inW, out: bufio.NewReader(outR), wait: func() error { <-served; return nil }, kill: func() {}}
	return &proxyHosts{cap: 10, hosts: []*proxyHost{h}}, h
}

// echoServer serves, on 127.0.0.1 until the test ends, connections that
// echo what they read; it returns its address.
func echoServer(t *testing.T) string {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() { io.Copy(c, c); c.Close() }()
		}
	}()
	return ln.Addr().String()
}

// connsTo counts this process's established connections to each address:
// one more to the proxy after a dial. Counted against the count before it,
// since a connection another test of this process left to a port the
// proxy now reuses may not have closed yet.
func TestConnsTo(t *testing.T) {
	p, err := faultproxy.New(echoServer(t))
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	addrs := []string{p.Addr(), "127.0.0.1:1"}
	before, err := connsTo(os.Getpid(), addrs)
	if err != nil {
		t.Fatal(err)
	}
	c, err := net.Dial("tcp", p.Addr())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	got, err := connsTo(os.Getpid(), addrs)
	if err != nil || len(got) != 2 || got[0]-before[0] != 1 || got[1] != 0 {
		t.Fatalf("connsTo %v (before the dial %v), %v; want one more to the proxy, none to port 1", got, before, err)
	}
}

// echo sends a line to addr and reads it back within timeout.
func echo(addr string, timeout time.Duration) error {
	c, err := net.DialTimeout("tcp", addr, timeout)
	if err != nil {
		return err
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(timeout))
	if _, err := c.Write([]byte("hi\n")); err != nil {
		return err
	}
	l, err := bufio.NewReader(c).ReadString('\n')
	if err == nil && l != "hi\n" {
		err = errors.New("echoed " + l)
	}
	return err
}

// A -roles value too long for one argument goes through a file.
func TestRolesArg(t *testing.T) {
	dir := t.TempDir()
	if v, err := rolesArg([]string{"c000", "c001"}, dir); err != nil || v != "c000=healthy,c001=healthy" {
		t.Fatalf("%q, %v", v, err)
	}
	names := make([]string, 10000)
	for i := range names {
		names[i] = "c" + strings.Repeat("0", 4)
	}
	v, err := rolesArg(names, dir)
	if err != nil || !strings.HasPrefix(v, "@"+dir) {
		t.Fatalf("%q, %v", v, err)
	}
	data, err := os.ReadFile(v[1:])
	if err != nil || strings.Count(string(data), "=healthy") != 10000 {
		t.Fatalf("file: %d roles, %v", strings.Count(string(data), "=healthy"), err)
	}
}

// The flags of a Go program's usage, and the phase flags passed only to
// a peer that knows them.
func TestPeerArgs(t *testing.T) {
	usage := `Usage of peer:
  -detect-within duration
    	scale run: ...
  -roles string
    	comma-separated name=role
  -saturate
    	requeue every object`
	flags := map[string]bool{}
	for _, m := range flagLine.FindAllStringSubmatch(usage, -1) {
		flags[m[1]] = true
	}
	if len(flags) != 3 || !flags["detect-within"] || !flags["saturate"] {
		t.Fatalf("flags %v", flags)
	}
	sf := &scaleFleet{Fleet: &fleet.Fleet{}, perPart: 1, names: []string{"c000", "c001", "c002", "c003"}}
	sr := scaleRun{f: sf, n: 4, detect: true, o: scaleOptions{Idle: time.Minute, IdleBig: time.Second, LoadRate: 100, LoadWindow: time.Second, DetectWithin: time.Minute}}
	args := strings.Join(sr.peerArgs("R", flags), " ")
	if !strings.Contains(args, "-idle 1m0s") || strings.Contains(args, "-load-rate") ||
		!strings.Contains(args, "-sample-clusters c000,c001,c002 -detect-within 1m0s") {
		t.Fatalf("args %s", args)
	}
	sr.n, sr.detect, flags["load-rate"] = 3000, false, true
	args = strings.Join(sr.peerArgs("R", flags), " ")
	if !strings.Contains(args, "-idle 1s") || !strings.Contains(args, "-load-rate 100 -load-window 1s") || strings.Contains(args, "detect") {
		t.Fatalf("args at 3000 without detection: %s", args)
	}
}
