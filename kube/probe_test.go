package kube

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"testing/synctest"
	"time"

	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/clusterpool/clusterpool/pool"
)

// An Unauthorized probe answer replaces the client at once (no waiting for
// the failure threshold) by a new dial, which reads the credentials anew:
// a Redial, not a Remove (no Removed event).
func TestProbeUnauthorizedRedials(t *testing.T) {
	var status atomic.Int32
	status.Store(http.StatusOK)
	srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.WriteHeader(int(status.Load()))
	}))
	defer srv.Close()
	var dials atomic.Int32
	dial := func(_ context.Context, key client.ObjectKey) (*Cluster, error) {
		dials.Add(1)
		done := make(chan struct{})
		close(done)
		return &Cluster{Key: key, config: &rest.Config{Host: srv.URL}, httpClient: srv.Client(),
			cancel: func() {}, done: done}, nil
	}
	p, err := pool.New(dial, pool.Options[client.ObjectKey, *Cluster]{MaxWait: 5 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	ev := watchEvents(t, p)
	key := client.ObjectKey{Namespace: "fleet", Name: "rotating-token"}
	if _, err := p.Get(context.Background(), key); err != nil {
		t.Fatal(err)
	}
	startProber(t, p, ProberOptions{Interval: 20 * time.Millisecond, Timeout: time.Second})

	n := ev.waitFor(t, 0, key, connected(true), 10*time.Second)
	status.Store(http.StatusUnauthorized)
	n = ev.waitFor(t, n, key, connected(false), 10*time.Second)
	if s := p.State(key); s.ConsecutiveFailures != 0 {
		t.Errorf("Unauthorized went through the breaker instead of a redial: %+v", s)
	}
	status.Store(http.StatusOK)
	ev.waitFor(t, n, key, connected(true), 10*time.Second)
	if d := dials.Load(); d < 2 {
		t.Fatalf("dials=%d, want a re-dial after Unauthorized", d)
	}
	if slices.ContainsFunc(ev.snapshot(), func(e pool.Event[client.ObjectKey]) bool { return e.Type == pool.Removed }) {
		t.Fatalf("the cluster was removed, not redialed: %+v", ev.snapshot())
	}
}

// fakeCluster is a Cluster whose probes go to srv.
func fakeCluster(key client.ObjectKey, srv *httptest.Server, rev string) *Cluster {
	done := make(chan struct{})
	close(done)
	return &Cluster{Key: key, revision: rev, config: &rest.Config{Host: srv.URL}, httpClient: srv.Client(),
		cancel: func() {}, done: done}
}

// The prober's workqueue probes every connected cluster again and again,
// reports each outcome, and forgets a cluster that left the pool.
func TestProberReportsEachConnectedCluster(t *testing.T) {
	srv := statusServer(t)
	fp := newFakePool()
	up, down := client.ObjectKey{Namespace: "f", Name: "up"}, client.ObjectKey{Namespace: "f", Name: "down"}
	fp.connect(fakeCluster(up, srv, ""))
	downSrv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.WriteHeader(http.StatusServiceUnavailable)
	}))
	defer downSrv.Close()
	fp.connect(fakeCluster(down, downSrv, ""))
	pr, err := NewProber(fp, ProberOptions{Interval: 10 * time.Millisecond, Timeout: time.Second, Concurrency: 2})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	stopped := make(chan error)
	go func() { stopped <- pr.Start(ctx) }()
	waitUntil(t, 10*time.Second, "3 probes of each cluster", func() bool {
		return len(fp.reportsOf(up)) >= 3 && len(fp.reportsOf(down)) >= 3
	})
	for _, err := range fp.reportsOf(up) {
		if err != nil {
			t.Fatalf("healthy cluster reported %v", err)
		}
	}
	for _, err := range fp.reportsOf(down) {
		if err == nil {
			t.Fatal("503 reported as a success")
		}
	}
	fp.Remove(down)
	n := len(fp.reportsOf(down))
	waitUntil(t, 10*time.Second, "3 more probes of the connected one", func() bool { return len(fp.reportsOf(up)) >= n+3 })
	if got := len(fp.reportsOf(down)); got > n+1 { // one may have been in flight
		t.Errorf("removed cluster probed %d more times", got-n)
	}
	cancel()
	if err := <-stopped; err != nil {
		t.Fatal(err)
	}
}

// fakeAPIServer is an in-memory apiserver for the Prober's synctest tests:
// its /readyz answers by mode, and it records when each request started.
type fakeAPIServer struct {
	origin time.Time
	mu     sync.Mutex
	mode   string // "ok", "503", "hang" (until the probe's timeout) or "refused"
	starts []time.Duration
	// wire, when set, records each answer as a read, as a Dialer's
	// connection does.
	wire *liveness
	// proto is the answers' HTTP major version (0: unset).
	proto int
}

func (s *fakeAPIServer) set(mode string) {
	s.mu.Lock()
	s.mode = mode
	s.mu.Unlock()
}

// requests returns when each request started, since origin.
func (s *fakeAPIServer) requests() []time.Duration {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.starts)
}

func (s *fakeAPIServer) RoundTrip(req *http.Request) (*http.Response, error) {
	s.mu.Lock()
	s.starts = append(s.starts, time.Since(s.origin))
	mode := s.mode
	s.mu.Unlock()
	switch mode {
	case "hang":
		<-req.Context().Done()
		return nil, req.Context().Err()
	case "refused":
		return nil, syscall.ECONNREFUSED
	}
	s.mu.Lock()
	if s.wire != nil {
		s.wire.saw()
	}
	s.mu.Unlock()
	code := http.StatusOK
	if mode == "503" {
		code = http.StatusServiceUnavailable
	}
	s.mu.Lock()
	proto := s.proto
	s.mu.Unlock()
	return &http.Response{StatusCode: code, ProtoMajor: proto, Body: io.NopCloser(strings.NewReader("ok")), Request: req}, nil
}

type noConns struct{}

func (noConns) CloseAll() {}

// wiredProber runs, in a synctest bubble, a Prober (Interval 10s, Timeout
// 5s, readyz as given) of one connected cluster whose /readyz srv answers
// and whose wire is lv, of phase 0. The Prober stops at the test's end.
func wiredProber(t *testing.T, readyz time.Duration) (*fakePool, *fakeAPIServer, *liveness) {
	return phasedProber(t, readyz, 0)
}

// phasedProber is wiredProber with the cluster's liveness of the given phase.
func phasedProber(t *testing.T, readyz time.Duration, phase float64) (*fakePool, *fakeAPIServer, *liveness) {
	srv := &fakeAPIServer{origin: time.Now(), mode: "ok"}
	lv := newLiveness()
	lv.connCloser, lv.phase = noConns{}, phase
	done := make(chan struct{})
	close(done)
	key := client.ObjectKey{Namespace: "f", Name: "wired"}
	fp := newFakePool()
	fp.connect(&Cluster{Key: key, config: &rest.Config{Host: "https://wired.invalid"},
		httpClient: &http.Client{Transport: srv}, conns: lv, cancel: func() {}, done: done})
	pr, err := NewProber(fp, ProberOptions{Interval: 10 * time.Second, Timeout: 5 * time.Second, ReadyzInterval: readyz})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	stopped := make(chan error)
	go func() { stopped <- pr.Start(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-stopped; err != nil {
			t.Error(err)
		}
	})
	return fp, srv, lv
}

// feed records a read on lv every `every` until `until` (since origin), as
// the HTTP/2 pings' acks do, or until the test ends.
func feed(t *testing.T, lv *liveness, origin time.Time, every, until time.Duration) {
	stop := make(chan struct{})
	t.Cleanup(func() { close(stop) })
	go func() {
		for at := every; at <= until; at += every {
			select {
			case <-time.After(time.Until(origin.Add(at))):
				lv.saw()
			case <-stop:
				return
			}
		}
	}()
}

// at sleeps until origin+d, then until the bubble is idle.
func at(origin time.Time, d time.Duration) {
	time.Sleep(time.Until(origin.Add(d)))
	synctest.Wait()
}

func seconds(ds ...float64) []time.Duration {
	out := make([]time.Duration, len(ds))
	for i, d := range ds {
		out[i] = time.Duration(d * float64(time.Second))
	}
	return out
}

var wiredKey = client.ObjectKey{Namespace: "f", Name: "wired"}

// A cluster whose wire answers (a PING ack read every pingEvery) is sent GET /readyz only
// every ReadyzInterval, and nothing is reported at the ticks it skips;
// ReadyzInterval = Interval gives ClusterCache's cadence.
func TestProberSkipsWhileTheWireAnswers(t *testing.T) {
	for _, tc := range []struct {
		readyz time.Duration
		want   []time.Duration
	}{
		{0, seconds(60, 120)},
		{30 * time.Second, seconds(30, 60, 90, 120)},
		{10 * time.Second, seconds(10, 20, 30, 40, 50, 60, 70, 80, 90, 100, 110, 120)},
	} {
		t.Run(tc.readyz.String(), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				fp, srv, lv := wiredProber(t, tc.readyz)
				feed(t, lv, srv.origin, pingEvery, 125*time.Second)
				at(srv.origin, 125*time.Second)
				if got := srv.requests(); !slices.Equal(got, tc.want) {
					t.Errorf("readyz at %v, want %v", got, tc.want)
				}
				if r := fp.reportsOf(wiredKey); len(r) != len(tc.want) || slices.ContainsFunc(r, func(e error) bool { return e != nil }) {
					t.Errorf("reports %v, want %d successes: one per /readyz, none per skip", r, len(tc.want))
				}
			})
		})
	}
}

// A cluster's phase brings its first GET /readyz after the dial forward by
// that fraction of ReadyzInterval, and only the first: clusters dialed
// together keep the spread. Every phase newLiveness draws is in [0, 1/2).
func TestProberFirstReadyzKeepsItsPhase(t *testing.T) {
	for _, tc := range []struct {
		phase float64
		want  []time.Duration
	}{
		{0, seconds(60, 120, 180)},
		{0.25, seconds(45, 105, 165)},
		{0.375, seconds(37.5, 97.5, 157.5)},
	} {
		t.Run(fmt.Sprint(tc.phase), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				_, srv, lv := phasedProber(t, 0, tc.phase)
				feed(t, lv, srv.origin, pingEvery, 185*time.Second)
				at(srv.origin, 185*time.Second)
				if got := srv.requests(); !slices.Equal(got, tc.want) {
					t.Errorf("readyz at %v, want %v", got, tc.want)
				}
			})
		})
	}
	seen := map[float64]bool{}
	for range 100 {
		p := newLiveness().phase
		if p < 0 || p >= 0.5 {
			t.Fatalf("phase %v outside [0, 1/2)", p)
		}
		seen[p] = true
	}
	if len(seen) < 50 {
		t.Errorf("100 livenesses drew %d distinct phases: clusters dialed together would probe together", len(seen))
	}
}

// A cluster whose wire went quiet is probed when its last read turns 5/2
// Interval old, then at every tick while it stays quiet.
func TestProberProbesWhenTheWireIsQuiet(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		_, srv, lv := wiredProber(t, 0)
		feed(t, lv, srv.origin, 4*time.Second, 32*time.Second)
		at(srv.origin, 80*time.Second)
		if got, want := srv.requests(), seconds(57, 67, 77); !slices.Equal(got, want) {
			t.Errorf("readyz at %v, want %v (last read at 32s)", got, want)
		}
	})
}

// A probe's answer is a read (docs/health.md). On a wire that pings
// (HTTP/2), only the probes reading it means the PINGs go unanswered: it
// is probed 5/2 Interval after each answer, not every Interval. An HTTP/1
// wire has no PINGs: once an answer tells so, its silence is quiet, and
// it gets GET /readyz every ReadyzInterval.
func TestProberQuietWireReadOnlyByItsProbes(t *testing.T) {
	for _, tc := range []struct {
		proto int
		want  []time.Duration
	}{
		{2, seconds(57, 82, 107)},
		{1, seconds(57, 117)},
	} {
		t.Run(fmt.Sprintf("HTTP/%d", tc.proto), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				_, srv, lv := wiredProber(t, 0)
				srv.mu.Lock()
				srv.wire, srv.proto = lv, tc.proto
				srv.mu.Unlock()
				feed(t, lv, srv.origin, 4*time.Second, 32*time.Second)
				at(srv.origin, 120*time.Second)
				if got := srv.requests(); !slices.Equal(got, tc.want) {
					t.Errorf("readyz at %v, want %v (last read at 32s, then only the probes' answers)", got, tc.want)
				}
			})
		})
	}
}

// A failed probe makes the cluster suspect: probed at every tick, though
// its wire answers, until a probe succeeds.
func TestProberProbesASuspectClusterEveryTick(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		fp, srv, lv := wiredProber(t, 0)
		srv.set("503") // the process answers, its readiness fails (e.g. etcd down)
		feed(t, lv, srv.origin, pingEvery, 165*time.Second)
		at(srv.origin, 95*time.Second)
		srv.set("ok")
		at(srv.origin, 165*time.Second)
		if got, want := srv.requests(), seconds(60, 70, 80, 90, 100, 160); !slices.Equal(got, want) {
			t.Errorf("readyz at %v, want %v", got, want)
		}
		r := fp.reportsOf(wiredKey)
		if len(r) != 6 || slices.ContainsFunc(r[:4], func(e error) bool { return e == nil }) || r[4] != nil || r[5] != nil {
			t.Errorf("reports %v, want 4 failures then 2 successes", r)
		}
	})
}

// Worst case of a hung (or black-holed) apiserver, its last read at t0:
// probed at t0 + 5/2 I, the N = 3 failures (the next ones an Interval
// apart) are in by t0 + 3/2 I + N(I + T), the bound the Prober's doc
// states, below ClusterCache's best case 4(I + T) + T.
func TestProberHungClusterFailsWithinTheBound(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const i, tm, n = 10 * time.Second, 5 * time.Second, 3
		fp, srv, lv := wiredProber(t, 0)
		t0 := 35*time.Second + 500*time.Millisecond
		feed(t, lv, srv.origin, 5*time.Second, 35*time.Second)
		at(srv.origin, t0)
		lv.saw()
		srv.set("hang")
		bound := t0 + i*3/2 + n*(i+tm)
		if bound >= t0+4*(i+tm)+tm {
			t.Fatalf("bound %v is not below ClusterCache's best case", bound-t0)
		}
		at(srv.origin, bound-time.Second)
		if r := fp.reportsOf(wiredKey); len(r) != n-1 {
			t.Fatalf("%d reports a second before the bound, want %d: the case is not the worst", len(r), n-1)
		}
		at(srv.origin, bound)
		r := fp.reportsOf(wiredKey)
		if len(r) != n || slices.Contains(r, nil) {
			t.Fatalf("reports %v by t0 + 3/2 I + N(I+T), want %d failures", r, n)
		}
	})
}

// A connection ended by the server (a killed apiserver resets or closes
// it) makes the Prober probe at once, and every tick after: the N = 3
// failures are in by t0 + (N-1)I.
func TestProberProbesALostConnectionAtOnce(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		fp, srv, lv := wiredProber(t, 0)
		conn, server := net.Pipe()
		dial := baseDial(func(context.Context, string, string) (net.Conn, error) { return conn, nil }, lv)
		lc, err := dial(context.Background(), "tcp", "wired.invalid:443")
		if err != nil {
			t.Fatal(err)
		}
		defer lc.Close()
		go io.Copy(io.Discard, lc) // the transport's read loop
		feed(t, lv, srv.origin, 5*time.Second, 50*time.Second)
		t0 := 33 * time.Second
		at(srv.origin, t0)
		srv.set("refused")
		server.Close()
		synctest.Wait()
		if got, want := srv.requests(), []time.Duration{t0}; !slices.Equal(got, want) {
			t.Fatalf("readyz at %v, want %v: at once", got, want)
		}
		at(srv.origin, t0+2*10*time.Second)
		if r := fp.reportsOf(wiredKey); len(r) != 3 || slices.Contains(r, nil) {
			t.Fatalf("reports %v by t0 + 2I, want 3 failures", r)
		}
	})
}

func TestProberOptionsReadyzInterval(t *testing.T) {
	p := newFakePool()
	for _, tc := range []struct {
		opts ProberOptions
		want string
	}{
		{ProberOptions{ReadyzInterval: -time.Second}, "kube: invalid options: ProberOptions.ReadyzInterval=-1s must not be negative"},
		{ProberOptions{ReadyzInterval: 5 * time.Second}, "kube: invalid options: ProberOptions.ReadyzInterval=5s must not be below Interval=10s"},
		{ProberOptions{Interval: time.Minute, ReadyzInterval: 30 * time.Second}, "kube: invalid options: ProberOptions.ReadyzInterval=30s must not be below Interval=1m0s"},
	} {
		_, err := NewProber(p, tc.opts)
		if !errors.Is(err, ErrInvalidOptions) || err.Error() != tc.want {
			t.Errorf("NewProber(%+v) = %v, want %q", tc.opts, err, tc.want)
		}
	}
	for _, tc := range []struct{ interval, readyz, want time.Duration }{
		{0, 0, DefaultReadyzInterval}, {2 * time.Minute, 0, 2 * time.Minute}, {time.Second, time.Second, time.Second},
	} {
		pr, err := NewProber(p, ProberOptions{Interval: tc.interval, ReadyzInterval: tc.readyz})
		if err != nil || pr.opts.ReadyzInterval != tc.want {
			t.Errorf("Interval %v, ReadyzInterval %v: got %v, %v; want ReadyzInterval %v", tc.interval, tc.readyz, pr, err, tc.want)
		}
	}
}
