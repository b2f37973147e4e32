package rotation

import (
	"flag"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/clusterpool/clusterpool/bench/peers/driver/internal/fleet"
	"github.com/clusterpool/clusterpool/bench/peers/protocol"
)

func TestUsernameRoundTrip(t *testing.T) {
	id := fleet.Identity{Peer: "clusterpool", Cluster: "c012", Gen: 4}
	got, ok := fleet.ParseUsername(id.Username())
	if !ok || got != id {
		t.Fatalf("parseUsername(%q) = %+v, %v", id.Username(), got, ok)
	}
	for _, name := range []string{"", "admin", "rotation:a:b", "rotation:a:b:x", "other:a:b:1"} {
		if _, ok := fleet.ParseUsername(name); ok {
			t.Errorf("parseUsername(%q) ok", name)
		}
	}
}

func auditLine(stage, verb, uri, user string, code int, at time.Time) auditEvent {
	ev := auditEvent{Stage: stage, Verb: verb, RequestURI: uri, Received: at}
	ev.User.Username = user
	ev.ResponseStatus = &struct {
		Code int `json:"code"`
	}{code}
	return ev
}

func TestClassify(t *testing.T) {
	at := time.Unix(100, 0)
	me := fleet.Identity{Peer: "p", Cluster: "c001", Gen: 2}.Username()
	other := fleet.Identity{Peer: "q", Cluster: "c001", Gen: 2}.Username()
	for _, c := range []struct {
		ev   auditEvent
		ok   bool
		kind requestKind
	}{
		{auditLine("ResponseComplete", "list", "/api/v1/nodes?limit=500", me, 200, at), true, relist},
		{auditLine("ResponseComplete", "watch", "/api/v1/nodes?sendInitialEvents=true&watch=true", me, 200, at), true, relist},
		{auditLine("ResponseComplete", "watch", "/api/v1/nodes?resourceVersion=7&watch=true", me, 200, at), true, rewatch},
		{auditLine("ResponseComplete", "get", "/api/v1/namespaces/default/configmaps/x", me, 200, at), true, otherRequest},
		{auditLine("ResponseStarted", "watch", "/api/v1/nodes?watch=true", me, 200, at), false, 0},
		{auditLine("ResponseComplete", "list", "/api/v1/nodes", other, 200, at), false, 0},
		{auditLine("ResponseComplete", "list", "/api/v1/nodes", "admin", 200, at), false, 0},
		{auditLine("ResponseStarted", "get", "/api/v1/namespaces/default/configmaps/x", "", 401, at), true, otherRequest},
		{auditLine("ResponseComplete", "get", "/api/v1/namespaces/default/configmaps/x", "", 401, at), false, 0},
	} {
		r, ok := classify(c.ev, "p")
		if ok != c.ok || (ok && r.Kind != c.kind) {
			t.Errorf("%s %s %s by %q: ok %v kind %v, want %v %v", c.ev.Stage, c.ev.Verb, c.ev.RequestURI, c.ev.User.Username, ok, r.Kind, c.ok, c.kind)
		}
		if ok && c.ev.User.Username == me && (r.Cluster != "c001" || r.Gen != 2 || r.Path != strings.Split(c.ev.RequestURI, "?")[0]) {
			t.Errorf("%s: %+v", c.ev.RequestURI, r)
		}
	}
}

// auditLog.read returns only what was written since the mark or the last
// read, and leaves a partial last line for the next read.
func TestAuditLogReadsFromItsMark(t *testing.T) {
	file := filepath.Join(t.TempDir(), "audit.log")
	me := fleet.Identity{Peer: "p", Cluster: "c000", Gen: 0}.Username()
	line := `{"stage":"ResponseComplete","verb":"list","requestURI":"/api/v1/nodes","user":{"username":"` + me + `"},"responseStatus":{"code":200},"requestReceivedTimestamp":"2026-12-05T06:51:10.582076Z"}` + "\n"
	write := func(s string) {
		f, err := os.OpenFile(file, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o600)
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		if _, err := f.WriteString(s); err != nil {
			t.Fatal(err)
		}
	}
	l := &auditLog{file: file}
	if err := l.mark(); err != nil { // no file yet
		t.Fatal(err)
	}
	write(line)
	if err := l.mark(); err != nil {
		t.Fatal(err)
	}
	write(line + line + line[:20])
	reqs, err := l.read("p")
	if err != nil || len(reqs) != 2 {
		t.Fatalf("first read: %d requests, %v; want 2", len(reqs), err)
	}
	write(line[20:])
	reqs, err = l.read("p")
	if err != nil || len(reqs) != 1 || reqs[0].Kind != relist || reqs[0].At.Format(time.RFC3339Nano) != "2026-12-05T06:51:10.582076Z" {
		t.Fatalf("second read: %+v, %v; want the completed line", reqs, err)
	}
}

// summarize attributes requests, connections, not-connected time and
// reconciles to the rotation whose window they fall in, and nothing
// outside the windows.
func TestSummarizeAttributesToRotations(t *testing.T) {
	t0 := time.UnixMilli(1_000_000)
	at := func(ms int64) time.Time { return t0.Add(time.Duration(ms) * time.Millisecond) }
	tl := timeline{Starts: []time.Time{at(0), at(10_000)}, Written: []time.Time{at(200), at(10_300)},
		Revoked: []time.Time{at(5_000)}, End: at(20_000), Conns: [][]uint64{{5, 7}, {6, 9}, {6, 12}}}
	ms := func(d int64) int64 { return at(d).UnixMilli() }
	var series []protocol.Point // 5 s buckets from 10 s before the first rotation
	for i := range 7 {
		series = append(series, protocol.Point{T: float64(5 * i), HealthyPerSec: float64(i + 1)})
	}
	fig := protocol.Figures{Version: "v", HealthyPerSec: 3, Reconciles: 9, StartUnixMs: ms(-10_000), Series: series, Availability: &protocol.Availability{
		FirstConnectedUnixMs: map[string]int64{"a": ms(-5_000), "b": ms(1_000)},
		NotConnected: map[string][][2]int64{
			"a": {{ms(-1_000), ms(500)}, {ms(9_000), ms(12_000)}}, // 0.5 s in 1; 1 s in 1, 2 s in 2
			"b": {{ms(15_000), ms(25_000)}},                       // 5 s in 2
		},
		Failed:   map[string][]int64{"a": {ms(-1), ms(100), ms(10_000)}},
		Requeued: map[string][]int64{"b": {ms(19_999), ms(20_000)}},
	}}
	reqs := []request{
		{At: at(-1), Kind: relist, Code: 200, Path: "/api/v1/nodes"},
		{At: at(1), Kind: relist, Code: 200, Path: "/api/v1/nodes"},
		{At: at(2), Kind: rewatch, Code: 200},
		{At: at(3), Code: 401},
		{At: at(10_001), Code: 409},
		{At: at(10_002), Kind: relist, Code: 200, Path: "/api/v1/nodes"},
		{At: at(20_000), Kind: relist, Code: 200},
	}
	got := summarize("p", fig, tl, reqs, []string{"a", "b"})
	want := rotationResult{Strategy: "p", Version: "v", Clusters: 2, ConnectedBeforeFirst: 1, HealthyPerSec: 3, Reconciles: 9,
		RotatingHealthyPerSec: 4.5, // the buckets from 0 to 20 s: 3, 4, 5, 6
		Relisted:              map[string]int{"/api/v1/nodes": 2},
		Windows: []rotationWindow{
			{Rotation: 1, StartUnixMs: ms(0), WriteS: 0.2, RevokedAfterS: 5, Relists: 1, Rewatches: 1, Requests: 2, Unauthorized: 1,
				NewConns: 3, NotConnectedClusters: 1, NotConnectedS: 1.5, MaxNotConnectedS: 1.5, Disconnects: 1, Failed: 1},
			{Rotation: 2, StartUnixMs: ms(10_000), WriteS: 0.3, Relists: 1, Requests: 2, OtherFailed: 1, NewConns: 3,
				NotConnectedClusters: 2, NotConnectedS: 7, MaxNotConnectedS: 5, Disconnects: 1, Failed: 1, Requeued: 1},
		}}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("summarize\n got %+v\nwant %+v", got, want)
	}
	var b strings.Builder
	if err := writeRotation(&b, rotationReport{Options: rotationOptions{Every: 10 * time.Second, Count: 2}, Results: []rotationResult{got}}); err != nil {
		t.Fatal(err)
	}
	for _, cell := range []string{"| relists (LIST or watch-list at the workload apiservers) | 1 |",
		"| seconds not connected, summed over clusters | 4.2 (1.5–7) |", "| clusters connected before the first rotation | 1 of 2 |",
		"Relisted: /api/v1/nodes × 2"} {
		if !strings.Contains(b.String(), cell) {
			t.Errorf("report lacks %q:\n%s", cell, b.String())
		}
	}
}

func TestRotationFlags(t *testing.T) {
	o, err := parse("-rotation")
	if err != nil {
		t.Fatal(err)
	}
	if !o.On() || !reflect.DeepEqual(o.Strategies, []string{"clustercache", "clusterpool"}) || o.run.Count != 6 {
		t.Fatalf("-rotation: %+v, strategies %v", o.run, o.Strategies)
	}
	if o, _ := parse("-rotation", "-strategies", "clusterpool"); !reflect.DeepEqual(o.Strategies, []string{"clusterpool"}) {
		t.Fatalf("-strategies ignored: %v", o.Strategies)
	}
	if _, err := parse("-rotation", "-rotate-every", "5s", "-revoke-after", "5s"); err == nil {
		t.Fatal("revocation after the next rotation: no error")
	}
}

// parse is the driver's command line as far as a rotation run reads it.
func parse(args ...string) (*Options, error) {
	fs := flag.NewFlagSet("rotation", flag.ContinueOnError)
	sh := fleet.Flags(fs)
	o := Register(fs, sh)
	if err := fs.Parse(args); err != nil {
		return nil, err
	}
	sh.SplitStrategies()
	return o, o.Defaults(fs)
}
