package clustercache

import (
	"context"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/go-logr/logr"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/util/workqueue"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/clusterpool/clusterpool/kube"
	"github.com/clusterpool/clusterpool/pool"
)

// sourceRig is a clusterCache on a pool whose dials succeed at once, with
// one started GetClusterSource source; every Cluster it names exists and
// is admitted. mapFunc blocks, for the cluster named block, on its calls
// after the first, until release is closed.
type sourceRig struct {
	cc      *clusterCache
	q       workqueue.TypedRateLimitingInterface[reconcile.Request]
	release chan struct{}
	mu      sync.Mutex
	calls   map[string]int
}

func newSourceRig(t *testing.T, block string, d time.Duration, names ...string) *sourceRig {
	t.Helper()
	s := runtime.NewScheme()
	if err := clusterv1.AddToScheme(s); err != nil {
		t.Fatal(err)
	}
	b := fake.NewClientBuilder().WithScheme(s)
	for _, n := range names {
		b = b.WithObjects(&clusterv1.Cluster{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: n}})
	}
	p, err := pool.New(func(context.Context, client.ObjectKey) (*kube.Cluster, error) { return &kube.Cluster{}, nil },
		pool.Options[client.ObjectKey, *kube.Cluster]{})
	if err != nil {
		t.Fatal(err)
	}
	r := &sourceRig{release: make(chan struct{}), calls: map[string]int{},
		q: workqueue.NewTypedRateLimitingQueue(workqueue.DefaultTypedControllerRateLimiter[reconcile.Request]())}
	all := func(client.ObjectKey) bool { return true }
	r.cc = &clusterCache{pool: p, clusters: b.Build(), log: logr.Discard(), admitted: all,
		metrics: clusterMetrics{admitted: all}}
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(func() {
		cancel()
		r.q.ShutDown()
		p.Close()
	})
	mapFunc := func(_ context.Context, o client.Object) []ctrl.Request {
		r.mu.Lock()
		r.calls[o.GetName()]++
		n := r.calls[o.GetName()]
		r.mu.Unlock()
		if o.GetName() == block && n > 1 {
			<-r.release
		}
		return []ctrl.Request{{NamespacedName: client.ObjectKeyFromObject(o)}}
	}
	if err := r.cc.GetClusterSource("test", mapFunc, WatchForProbeFailure(d)).Start(ctx, r.q); err != nil {
		t.Fatal(err)
	}
	return r
}

func key(name string) client.ObjectKey { return client.ObjectKey{Namespace: "ns", Name: name} }

// connect dials the clusters, and takes the connect events' requests.
func (r *sourceRig) connect(t *testing.T, names ...string) {
	t.Helper()
	for _, n := range names {
		if _, err := r.cc.pool.Get(context.Background(), key(n)); err != nil {
			t.Fatal(err)
		}
	}
	synctest.Wait()
	if got := r.take(); len(got) != len(names) {
		t.Fatalf("connect events for %v, want one for each of %v", got, names)
	}
}

// probe reports a health probe of the cluster as the Prober does.
func (r *sourceRig) probe(name string, err error) {
	r.cc.pool.Report(key(name), err)
	r.cc.probed(key(name), err)
}

// take returns the names of the requests queued, and empties the queue.
func (r *sourceRig) take() []string {
	var names []string
	for r.q.Len() > 0 {
		req, _ := r.q.Get()
		r.q.Done(req)
		r.q.Forget(req)
		names = append(names, req.Name)
	}
	return names
}

// TestProbeFailureEventWhileBusy: a cluster whose probe failed while the
// source was busy in mapFunc (with another cluster's event) gets its
// event once mapFunc returns, with no further pool event.
func TestProbeFailureEventWhileBusy(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r := newSourceRig(t, "a", 15*time.Second, "a", "b")
		r.connect(t, "a", "b")
		time.Sleep(20 * time.Second) // both are 15 s past their last success (the connect)

		r.probe("a", errProbe)
		synctest.Wait() // mapFunc holds a's event
		r.probe("b", errProbe)
		synctest.Wait()
		close(r.release)
		synctest.Wait()
		got := r.take()
		if len(got) != 2 || got[0] != "a" || got[1] != "b" {
			t.Fatalf("requests %v, want a's then b's", got)
		}
	})
}

// TestProbeFailureEventFollowsProbes: as in Cluster API, which checks once
// per reconcile, after its probe, the event comes after a probe that
// fails once the duration has passed: none for a healthy cluster, even
// with a duration below the probe interval, and none before the failed
// probe is known.
func TestProbeFailureEventFollowsProbes(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r := newSourceRig(t, "", 2*time.Second, "healthy", "failing")
		r.connect(t, "healthy", "failing")
		for range 3 { // three probe intervals: every probe of "healthy" succeeds
			time.Sleep(ProbeInterval)
			r.probe("healthy", nil)
			synctest.Wait()
			if got := r.take(); len(got) != 0 {
				t.Fatalf("requests %v for a healthy cluster", got)
			}
		}
		r.probe("failing", errProbe)
		synctest.Wait()
		if got := r.take(); len(got) != 1 || got[0] != "failing" {
			t.Fatalf("requests %v after the failed probe, want one for failing", got)
		}
		time.Sleep(ProbeInterval)
		r.probe("failing", errProbe) // the event for this outage was sent
		synctest.Wait()
		if got := r.take(); len(got) != 0 {
			t.Fatalf("requests %v after a second failed probe, want none", got)
		}
	})
}
