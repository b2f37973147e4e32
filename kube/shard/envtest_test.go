package shard

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"sort"
	"sync/atomic"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	utilnet "k8s.io/apimachinery/pkg/util/net"
	"k8s.io/client-go/rest"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	"github.com/clusterpool/clusterpool/internal/faultproxy"
	"github.com/clusterpool/clusterpool/pool"
)

// Short leases keep the test's wall time small.
const (
	envD  = 4 * time.Second
	envRD = 3 * time.Second
	envRI = 500 * time.Millisecond
	group = "capi"
)

// runs numbers the test's runs (-count), each in a namespace of its own on
// the shared apiserver.
var runs atomic.Int32

func clusterList() client.ObjectList {
	l := &unstructured.UnstructuredList{}
	l.SetAPIVersion("cluster.x-k8s.io/v1beta2")
	l.SetKind("ClusterList")
	return l
}

// replica is one controller replica: a manager talking to the management
// apiserver through its own fault proxy, a Sharder and a pool.
type replica struct {
	name    string
	proxy   *faultproxy.Proxy
	sharder *Sharder
	pool    *pool.Pool[client.ObjectKey, string]
	cancel  context.CancelFunc
	done    chan error
	// httpClient is the manager's, shared by its clients.
	httpClient *http.Client
}

func startReplica(t *testing.T, fleet, name string, obs *observer, obsCtx context.Context) *replica {
	t.Helper()
	u, err := url.Parse(mgmtCfg.Host)
	if err != nil {
		t.Fatal(err)
	}
	proxy, err := faultproxy.New(u.Host)
	if err != nil {
		t.Fatal(err)
	}
	cfg := rest.CopyConfig(mgmtCfg)
	cfg.Host = "https://" + proxy.Addr()
	cfg.Timeout = envRD
	mgr, err := ctrl.NewManager(cfg, ctrl.Options{Metrics: metricsserver.Options{BindAddress: "0"}, HealthProbeBindAddress: "0"})
	if err != nil {
		t.Fatal(err)
	}
	c, err := client.New(cfg, client.Options{HTTPClient: mgr.GetHTTPClient(), Scheme: mgr.GetScheme()})
	if err != nil {
		t.Fatal(err)
	}
	p, err := pool.New(func(_ context.Context, k client.ObjectKey) (string, error) { return k.String(), nil },
		pool.Options[client.ObjectKey, string]{})
	if err != nil {
		t.Fatal(err)
	}
	s, err := New(c, Options{Group: group, Identity: name, Namespace: fleet,
		LeaseDuration: envD, RenewDeadline: envRD, RenewInterval: envRI,
		Clusters: ListKeys(mgr.GetAPIReader(), clusterList, client.InNamespace(fleet)),
		Pool:     PoolOf(p)})
	if err != nil {
		t.Fatal(err)
	}
	obs.watch(name, s.Subscribe(obsCtx))
	if err := mgr.Add(s); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	r := &replica{name: name, proxy: proxy, sharder: s, pool: p, cancel: cancel, done: make(chan error, 1), httpClient: mgr.GetHTTPClient()}
	go func() { r.done <- mgr.Start(ctx) }()
	return r
}

// stop stops the replica's manager; with keepLease the apiserver is cut
// off first, so the Lease stays behind as after a crash.
func (r *replica) stop(t *testing.T, keepLease bool) {
	t.Helper()
	if keepLease {
		r.proxy.SetMode(faultproxy.Refuse)
	}
	r.cancel()
	err := <-r.done
	// The manager does not pass on errors of runnables after its context
	// ended; the Leases left behind are checked at the end of the test.
	if err != nil {
		t.Errorf("%s: %v", r.name, err)
	}
	r.pool.Close()
	r.proxy.Close()
	utilnet.CloseIdleConnectionsFor(r.httpClient.Transport)
}

// waitSteady waits until every key is owned by exactly one of live, every
// live replica sees exactly live as members, and its pool holds exactly
// the clusters it owns. It returns the owner of each key.
func waitSteady(t *testing.T, keys []client.ObjectKey, live ...*replica) map[client.ObjectKey]string {
	t.Helper()
	var want []string
	for _, r := range live {
		want = append(want, r.name)
	}
	sort.Strings(want)
	deadline := time.Now().Add(60 * time.Second)
	for tick := time.NewTicker(50 * time.Millisecond); ; <-tick.C {
		owners, why := steady(keys, want, live)
		if why == "" {
			tick.Stop()
			return owners
		}
		if time.Now().After(deadline) {
			t.Fatalf("no steady state with %v: %s", want, why)
		}
	}
}

func steady(keys []client.ObjectKey, want []string, live []*replica) (map[client.ObjectKey]string, string) {
	owners := map[client.ObjectKey]string{}
	for _, r := range live {
		if got := r.sharder.Members(); !slices.Equal(got, want) {
			return nil, fmt.Sprintf("%s sees members %v", r.name, got)
		}
		var owned []client.ObjectKey
		for _, k := range keys {
			if r.sharder.Owns(k) {
				if o, ok := owners[k]; ok {
					return nil, fmt.Sprintf("%v owned by %s and %s", k, o, r.name)
				}
				owners[k] = r.name
				owned = append(owned, k)
			}
		}
		inPool := r.pool.Keys()
		if len(inPool) != len(owned) {
			return nil, fmt.Sprintf("%s owns %d clusters, its pool holds %d", r.name, len(owned), len(inPool))
		}
		for _, k := range inPool {
			if !r.sharder.Owns(k) {
				return nil, fmt.Sprintf("%s's pool holds %v, which it does not own", r.name, k)
			}
		}
	}
	if len(owners) != len(keys) {
		return nil, fmt.Sprintf("%d of %d clusters owned", len(owners), len(keys))
	}
	return owners, ""
}

func ownersOf(owners map[client.ObjectKey]string, name string) []client.ObjectKey {
	var keys []client.ObjectKey
	for k, o := range owners {
		if o == name {
			keys = append(keys, k)
		}
	}
	return keys
}

// createClusters creates n Cluster objects in a new namespace and returns
// the namespace and their keys.
func createClusters(t *testing.T, c client.Client, n int) (string, []client.ObjectKey) {
	t.Helper()
	fleet := fmt.Sprintf("fleet-%d", runs.Add(1))
	ctx := t.Context()
	if err := c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: fleet}}); err != nil {
		t.Fatal(err)
	}
	keys := make([]client.ObjectKey, n)
	for i := range keys {
		u := &unstructured.Unstructured{}
		u.SetAPIVersion("cluster.x-k8s.io/v1beta2")
		u.SetKind("Cluster")
		u.SetNamespace(fleet)
		u.SetName(fmt.Sprintf("workload-%02d", i))
		// Never dialed: the replicas' pools only record the keys.
		u.Object["spec"] = map[string]any{"controlPlaneEndpoint": map[string]any{"host": "127.0.0.1", "port": int64(6443)}}
		if err := c.Create(ctx, u); err != nil {
			t.Fatal(err)
		}
		keys[i] = client.ObjectKeyFromObject(u)
	}
	return fleet, keys
}

func leaseNames(t *testing.T, c client.Client, fleet string) []string {
	t.Helper()
	var l coordinationv1.LeaseList
	if err := c.List(t.Context(), &l, client.InNamespace(fleet), client.MatchingLabels{GroupLabel: group}); err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, it := range l.Items {
		names = append(names, it.Name)
	}
	sort.Strings(names)
	return names
}
