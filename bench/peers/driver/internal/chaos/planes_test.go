package chaos

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	"github.com/clusterpool/clusterpool/bench/peers/driver/internal/fleet"
	"github.com/clusterpool/clusterpool/internal/faultproxy"
	"github.com/clusterpool/clusterpool/internal/grayproxy"
)

// namedPlane is a plane for onAll's tests.
type namedPlane string

func (p namedPlane) planeName() string { return string(p) }

// onAll releases every plane's step together: each step here returns
// only once every plane has entered its own, which a one-after-another
// onAll never reaches (synctest reports the deadlock).
func TestOnAllStepsEveryPlaneAtOnce(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		planes := []namedPlane{"a", "b", "c"}
		var entered sync.WaitGroup
		entered.Add(len(planes))
		var mu sync.Mutex
		seen := map[namedPlane]int{}
		err := onAll(t.Context(), planes, func(_ context.Context, p namedPlane) error {
			mu.Lock()
			seen[p]++
			mu.Unlock()
			entered.Done()
			entered.Wait()
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
		for _, p := range planes {
			if seen[p] != 1 {
				t.Fatalf("plane %s stepped %d times, want once (%v)", p, seen[p], seen)
			}
		}
	})
}

// onAll's error names each plane whose step failed, and wraps its error.
func TestOnAllNamesTheFailedPlanes(t *testing.T) {
	errBoom := errors.New("boom")
	err := onAll(t.Context(), []namedPlane{"adapter", "stock"}, func(_ context.Context, p namedPlane) error {
		if p == "stock" {
			return errBoom
		}
		return nil
	})
	if !errors.Is(err, errBoom) || err.Error() != "stock: boom" {
		t.Fatalf("err = %v, want stock: boom", err)
	}
}

// twoPlaneRun is a run on two planes whose management apiservers are fake
// clients holding c000's and c001's Secrets; each Cluster has a proxy
// chain per plane (real, on 127.0.0.1, passing to nothing).
func twoPlaneRun(t *testing.T) (*chaosRun, []client.Client) {
	t.Helper()
	f := &fleet.Fleet{Workload: []*rest.Config{{Host: "https://127.0.0.1:1"}}}
	trust := testTrust(t, 1)
	var planes []*chaosPlane
	var clients []client.Client
	clusters := []*chaosCluster{{Name: "c000", Live: true, TokenGen: 1}, {Name: "c001", Live: true, TokenGen: 1}}
	for i, cache := range []string{"adapter", "stock"} {
		var secrets []client.Object
		for _, c := range clusters {
			px, g, err := newChain(f, trust, 0)
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { px.Close(); g.Close() })
			c.Proxies, c.Grays = append(c.Proxies, px), append(c.Grays, g)
			kc := []byte(cache + "'s kubeconfig of " + c.Name)
			c.Kubeconfigs = append(c.Kubeconfigs, kc)
			secrets = append(secrets, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: fleet.Namespace, Name: c.Name + "-kubeconfig"},
				Data: map[string][]byte{"value": kc}})
		}
		cl := fake.NewClientBuilder().WithObjects(secrets...).Build()
		clients = append(clients, cl)
		planes = append(planes, &chaosPlane{cache: cache, index: i, mgmt: cl})
	}
	cf := &chaosFleet{Fleet: f, trust: trust, planes: planes, clusters: clusters,
		auth: &fleet.Authenticator{Valid: map[string]fleet.Identity{}, Revoked: map[string]fleet.Identity{}}, machines: 1}
	return &chaosRun{cf: cf}, clients
}

// closeProxies closes r's proxies.
func closeProxies(r *chaosRun) {
	for _, c := range r.cf.clusters {
		c.closeProxies()
	}
}

// secretOf reads Cluster name's Secret value on c ("" if missing).
func secretOf(t *testing.T, c client.Client, name string) string {
	t.Helper()
	s := &corev1.Secret{}
	if err := c.Get(context.Background(), client.ObjectKey{Namespace: fleet.Namespace, Name: name + "-kubeconfig"}, s); err != nil {
		return ""
	}
	return string(s.Data["value"])
}

// The schedule is played on every plane: while each fault holds, every
// plane shows it (both proxies in the fault's mode, both Secrets deleted
// or garbage), and once it is undone every plane is back (its own
// kubeconfig); each fault is recorded once, from its time to its end.
func TestPlayAppliesEachFaultToEveryPlane(t *testing.T) {
	r, clients := twoPlaneRun(t)
	synctest.Test(t, func(t *testing.T) {
		defer closeProxies(r) // SetMode in the bubble made channels of it
		r.schedule = []fault{
			{ID: 0, Class: faultBlackhole, At: 0, Length: 30 * time.Second, Target: 0},
			{ID: 1, Class: faultSecretDelete, At: 10 * time.Second, Length: 20 * time.Second, Target: 1},
			{ID: 2, Class: faultSecretGarbage, At: 40 * time.Second, Length: 5 * time.Second, Target: 0},
			{ID: 3, Class: faultErrors60, At: 50 * time.Second, Length: 10 * time.Second, Target: 1},
		}
		r.t0 = time.Now()
		done := make(chan struct{})
		go func() { r.play(t.Context()); close(done) }()
		at := func(d time.Duration) {
			time.Sleep(time.Until(r.t0.Add(d)))
			synctest.Wait()
		}
		c0, c1 := r.cf.clusters[0], r.cf.clusters[1]
		at(15 * time.Second)
		for i, cl := range clients {
			if m := c0.Proxies[i].Mode(); m != faultproxy.Blackhole {
				t.Errorf("at 15 s, plane %d: c000's proxy %s, want blackhole", i, m)
			}
			if v := secretOf(t, cl, "c001"); v != "" {
				t.Errorf("at 15 s, plane %d: c001's Secret %q, want deleted", i, v)
			}
		}
		at(35 * time.Second)
		for i, cl := range clients {
			if m := c0.Proxies[i].Mode(); m != faultproxy.Pass {
				t.Errorf("at 35 s, plane %d: c000's proxy %s, want pass", i, m)
			}
			if v := secretOf(t, cl, "c001"); v != string(c1.Kubeconfigs[i]) {
				t.Errorf("at 35 s, plane %d: c001's Secret %q, want its own kubeconfig back", i, v)
			}
		}
		at(42 * time.Second)
		for i, cl := range clients {
			if v := secretOf(t, cl, "c000"); !strings.HasPrefix(v, "garbage") {
				t.Errorf("at 42 s, plane %d: c000's Secret %q, want garbage", i, v)
			}
		}
		at(55 * time.Second)
		want := fleet.DefaultGrayFaults.Of(fleet.GrayErrors60, 3)
		for i := range clients {
			if f := c1.Grays[i].Fault(); f != want {
				t.Errorf("at 55 s, plane %d: c001's gray proxy %+v, want %+v (the same sequence on every plane)", i, f, want)
			}
			if f := c0.Grays[i].Fault(); f != grayproxy.PassFault() {
				t.Errorf("at 55 s, plane %d: c000's gray proxy %+v, want pass", i, f)
			}
		}
		<-done
		for i, cl := range clients {
			if v := secretOf(t, cl, "c000"); v != string(c0.Kubeconfigs[i]) {
				t.Errorf("at the end, plane %d: c000's Secret %q, want its own kubeconfig back", i, v)
			}
			if f := c1.Grays[i].Fault(); f != grayproxy.PassFault() {
				t.Errorf("at the end, plane %d: c001's gray proxy %+v, want pass", i, f)
			}
		}
		checkEvents(t, r)
	})
}

// checkEvents checks that r recorded each fault of its schedule once,
// from its time to its end, without error.
func checkEvents(t *testing.T, r *chaosRun) {
	t.Helper()
	events := r.sortedEvents()
	if len(events) != len(r.schedule) {
		t.Fatalf("%d events, want %d", len(events), len(r.schedule))
	}
	for i, f := range r.schedule {
		e := events[i]
		if e.ID != f.ID || e.Err != "" || e.Start != f.At.Seconds() || e.End != f.end().Seconds() {
			t.Errorf("event %+v, want fault %+v from %v to %v without error", e, f, f.At.Seconds(), f.end().Seconds())
		}
	}
}

// A token rotation writes a new token into every plane's Secret, each
// plane's its own, and revokes the older ones of that Cluster on every
// plane, and only those.
func TestTokenRotateOnEveryPlane(t *testing.T) {
	r, clients := twoPlaneRun(t)
	c0 := r.cf.clusters[0]
	old := map[string]fleet.Identity{}
	for _, p := range r.cf.planes {
		for _, name := range []string{"c000", "c001"} {
			id := fleet.Identity{Peer: p.cache, Cluster: name, Gen: 1}
			old[r.cf.auth.Issue(id)] = id
		}
	}
	class, err := classOf(faultTokenRotate)
	if err != nil {
		t.Fatal(err)
	}
	h := faultHit{fault: fault{Class: faultTokenRotate}, c: c0}
	if err := class.Apply(t.Context(), r, h); err != nil {
		t.Fatal(err)
	}
	tokens := map[string]bool{}
	for i, cl := range clients {
		kc, err := clientcmd.Load([]byte(secretOf(t, cl, "c000")))
		if err != nil {
			t.Fatalf("plane %d: %v", i, err)
		}
		tok := kc.AuthInfos["u"].Token
		id, ok := r.cf.auth.Valid[tok]
		if !ok || id != (fleet.Identity{Peer: r.cf.planes[i].cache, Cluster: "c000", Gen: 2}) {
			t.Fatalf("plane %d: token of %+v (known %v), want %s's c000 generation 2", i, id, ok, r.cf.planes[i].cache)
		}
		tokens[tok] = true
	}
	if len(tokens) != 2 {
		t.Fatal("both planes got the same token")
	}
	if err := class.Undo(t.Context(), r, h); err != nil {
		t.Fatal(err)
	}
	for tok, id := range old {
		_, revoked := r.cf.auth.Revoked[tok]
		if want := id.Cluster == "c000"; revoked != want {
			t.Errorf("%+v revoked %v, want %v", id, revoked, want)
		}
	}
}

// testTrust is a gray proxies' trust for k workload apiservers that ask
// for no client certificate.
func testTrust(t *testing.T, k int) *fleet.GrayTrust {
	t.Helper()
	ca, err := grayproxy.NewCA()
	if err != nil {
		t.Fatal(err)
	}
	return &fleet.GrayTrust{CA: ca, ClientCAs: make([][]byte, k)}
}
