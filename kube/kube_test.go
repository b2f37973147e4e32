package kube

import (
	"bytes"
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/go-logr/logr/funcr"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/util/workqueue"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/clusterpool/clusterpool/breaker"
	"github.com/clusterpool/clusterpool/internal/faultproxy"
	"github.com/clusterpool/clusterpool/pool"
)

// A reachable cluster connects through its kubeconfig Secret; its clients
// read and write the real workload apiserver. With the Source running, the
// first Get does not wait for the dial (the pool cannot tell yet how long
// one takes) but says come back at its deadline, and the Source enqueues
// the cluster on Connected: the controller's loop.
func TestDialReachableCluster(t *testing.T) {
	needEnvtest(t)
	key := client.ObjectKey{Namespace: "fleet", Name: "reachable"}
	putKubeconfig(t, key, kubeconfig(t, "", ""))
	p, src := newTestPool(t, DialerOptions{WatchTypes: []client.Object{&corev1.ConfigMap{}}}, pool.Options[client.ObjectKey, *Cluster]{
		MaxWait: 10 * time.Second, // the first dial syncs informers
	})
	q := workqueue.NewTypedRateLimitingQueue(workqueue.DefaultTypedControllerRateLimiter[reconcile.Request]())
	defer q.ShutDown()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	if err := Source(p, ClusterRequest).Start(ctx, q); err != nil {
		t.Fatal(err)
	}

	_, err := p.Get(pool.Requeued(ctx), key)
	if res, rerr := Requeue(err); !errors.Is(err, pool.ErrWaitTimeout) || rerr != nil || res.RequeueAfter < 9*time.Second {
		t.Fatalf("first Get: %v, requeue %+v %v; want ErrWaitTimeout, come back near the 10s deadline", err, res, rerr)
	}
	req, _ := q.Get() // Connected
	if req.NamespacedName != key {
		t.Fatalf("enqueued %v, want %v", req, key)
	}
	q.Done(req)
	c, err := p.Get(ctx, key)
	if err != nil {
		t.Fatalf("Get after Connected: %v", err)
	}
	if c.Revision() == "" || c.Key != key || src.n.Load() != 1 {
		t.Fatalf("cluster %v revision %q dials %d", c, c.Revision(), src.n.Load())
	}
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "clusterpool-probe"},
		Data: map[string]string{"owner": "kube_test"}}
	if err := c.Uncached.Create(ctx, cm); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatalf("create in the workload cluster: %v", err)
	}
	var got corev1.ConfigMap
	if err := c.Uncached.Get(ctx, client.ObjectKeyFromObject(cm), &got); err != nil || got.Data["owner"] != "kube_test" {
		t.Fatalf("uncached read: %v %v", err, got.Data)
	}
	var list corev1.ConfigMapList
	if err := c.Client.List(ctx, &list, client.InNamespace("default")); err != nil {
		t.Fatalf("cached list: %v", err)
	}
	if again, err := p.Get(ctx, key); err != nil || again != c || src.n.Load() != 1 {
		t.Fatalf("hit: %v %v dials %d", again, err, src.n.Load())
	}
}

// A cluster whose network black-holes trips the breaker after the threshold
// of failed dials; then Gets are rejected at once without dialing.
func TestDeadClusterTrips(t *testing.T) {
	needEnvtest(t)
	proxy := workProxy(t)
	proxy.SetMode(faultproxy.Hold)
	key := client.ObjectKey{Namespace: "fleet", Name: "dead"}
	putKubeconfig(t, key, kubeconfig(t, proxy.Addr(), ""))
	// MaxWait above the readyz timeout: each Get sees its dial fail. A
	// DialTimeout far above it: a dial that times out past half its
	// DialTimeout opens the breaker at once (a hang), which a loaded
	// machine must not turn this readyz timeout into.
	p, src := newTestPool(t, DialerOptions{ReadyzTimeout: 300 * time.Millisecond}, pool.Options[client.ObjectKey, *Cluster]{
		MaxWait: 5 * time.Second, DialTimeout: 20 * time.Second,
		Breaker: breaker.Settings{OpenTimeout: time.Hour},
	})
	for i := range 3 {
		_, err := p.Get(context.Background(), key)
		if !errors.Is(err, pool.ErrDialFailed) || !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("dial %d: %v, want a failed dial (readyz timed out)", i, err)
		}
	}
	if s := p.State(key); s.Breaker != breaker.StateOpen || src.n.Load() != 3 {
		t.Fatalf("after 3 failed dials: %+v, dials %d", s, src.n.Load())
	}
	for range 100 {
		start := time.Now()
		if _, err := p.Get(context.Background(), key); !errors.Is(err, pool.ErrCircuitOpen) {
			t.Fatalf("Get on open breaker: %v", err)
		}
		if d := time.Since(start); d > time.Second { // generous: it is a map read
			t.Fatalf("rejection took %v", d)
		}
	}
	if n := src.n.Load(); n != 3 {
		t.Errorf("rejected Gets dialed: %d dials", n)
	}
}

// A connected cluster whose network starts black-holing is evicted by the
// prober's failed probes, and comes back with a Connected event when the
// network heals.
func TestProbeEvictsAndRecovers(t *testing.T) {
	needEnvtest(t)
	proxy := workProxy(t)
	key := client.ObjectKey{Namespace: "fleet", Name: "flapping"}
	putKubeconfig(t, key, kubeconfig(t, proxy.Addr(), ""))
	p, _ := newTestPool(t, DialerOptions{ReadyzTimeout: 300 * time.Millisecond}, pool.Options[client.ObjectKey, *Cluster]{
		MaxWait: 5 * time.Second, DialTimeout: time.Second,
		Breaker: breaker.Settings{OpenTimeout: 200 * time.Millisecond, MaxOpenTimeout: 400 * time.Millisecond},
	})
	ev := watchEvents(t, p)
	startProber(t, p, ProberOptions{Interval: 50 * time.Millisecond, Timeout: 200 * time.Millisecond,
		Logger: funcr.New(func(prefix, args string) { t.Log(prefix, args) }, funcr.Options{Verbosity: 1})})

	first := getEventually(t, p, key)
	n := ev.waitFor(t, 0, key, connected(true), 30*time.Second)
	proxy.SetMode(faultproxy.Hold)
	n = ev.waitFor(t, n, key, connected(false), 30*time.Second)
	if _, err := p.Get(context.Background(), key); !errors.Is(err, pool.ErrCircuitOpen) {
		t.Fatalf("Get after eviction: %v", err)
	}
	proxy.SetMode(faultproxy.Pass)
	ev.waitFor(t, n, key, connected(true), 30*time.Second) // the pool's own probe dial
	second, ok := p.Peek(key)
	if !ok || second == first {
		t.Fatalf("after recovery: connected=%v same client=%v", ok, second == first)
	}
	var nodes corev1.NodeList
	if err := second.Uncached.List(context.Background(), &nodes); err != nil {
		t.Fatalf("list after recovery: %v", err)
	}
}

// A rotated kubeconfig Secret is picked up without waiting for a failure.
func TestRotatedSecretIsPickedUp(t *testing.T) {
	needEnvtest(t)
	key := client.ObjectKey{Namespace: "fleet", Name: "rotated"}
	putKubeconfig(t, key, kubeconfig(t, "", ""))
	p, _ := newTestPool(t, DialerOptions{}, pool.Options[client.ObjectKey, *Cluster]{MaxWait: 10 * time.Second})
	ev := watchEvents(t, p)
	hc, err := rest.HTTPClientFor(mgmtCfg)
	if err != nil {
		t.Fatal(err)
	}
	defer closeIdle(hc)
	informers, err := cache.New(mgmtCfg, cache.Options{HTTPClient: hc})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	var running []chan error
	for _, r := range []interface{ Start(context.Context) error }{informers, &SecretWatcher{Informers: informers, Pool: p}} {
		done := make(chan error, 1)
		go func() { done <- r.Start(ctx) }()
		running = append(running, done)
	}
	defer func() {
		cancel()
		for _, d := range running {
			<-d
		}
	}()
	old := getEventually(t, p, key)
	n := ev.waitFor(t, 0, key, connected(true), 30*time.Second)
	// The same credentials through "localhost": another kubeconfig.
	rotated := kubeconfig(t, strings.Replace(workAddr(t), "127.0.0.1", "localhost", 1), "")
	putKubeconfig(t, key, rotated)
	ev.waitFor(t, n, key, connected(true), 30*time.Second)
	c, ok := p.Peek(key)
	if !ok || c == old || c.Revision() != KubeconfigRevision(rotated) {
		t.Fatalf("after rotation: connected=%v same client=%v, want a new client at revision %q", ok, c == old, KubeconfigRevision(rotated))
	}
}

// Credentials never show up in errors or logs.
func TestCredentialsNeverLeak(t *testing.T) {
	needEnvtest(t)
	const canary = "canary-token-0d1f2e3c4b5a"
	key := client.ObjectKey{Namespace: "fleet", Name: "canary"}
	putKubeconfig(t, key, kubeconfig(t, "", canary))
	var logs bytes.Buffer
	logger := funcr.New(func(prefix, args string) { logs.WriteString(prefix + args + "\n") }, funcr.Options{Verbosity: 10})
	p, _ := newTestPool(t, DialerOptions{Logger: logger}, pool.Options[client.ObjectKey, *Cluster]{MaxWait: 10 * time.Second})
	_, err := p.Get(context.Background(), key)
	if !errors.Is(err, pool.ErrDialFailed) || !apierrors.IsUnauthorized(err) {
		t.Fatalf("Get with a bad token: %v, want a failed dial that is Unauthorized", err)
	}
	for _, text := range []string{err.Error(), logs.String()} {
		if strings.Contains(text, canary) {
			t.Fatalf("the token leaked: %s", text)
		}
	}
	// A kubeconfig that does not parse is reported without its content.
	bad := []byte("apiVersion: v1\nclusters: [" + canary)
	if _, err := ParseKubeconfig(bad); !errors.Is(err, ErrInvalidKubeconfig) || strings.Contains(err.Error(), canary) {
		t.Fatalf("ParseKubeconfig: %v", err)
	}
	bkey := client.ObjectKey{Namespace: "fleet", Name: "garbled"}
	putKubeconfig(t, bkey, bad)
	if _, err := p.Get(context.Background(), bkey); !errors.Is(err, ErrInvalidKubeconfig) || strings.Contains(err.Error(), canary) {
		t.Fatalf("Get with a garbled kubeconfig: %v", err)
	}
}

func TestRequeue(t *testing.T) {
	if r, err := Requeue(nil); err != nil || r.RequeueAfter != 0 {
		t.Errorf("nil: %v %v", r, err)
	}
	wait := &pool.Error{Kind: pool.ErrWaitTimeout, Cluster: "x", RetryAt: time.Now().Add(time.Minute)}
	if r, err := Requeue(wait); err != nil || r.RequeueAfter < 59*time.Second {
		t.Errorf("wait timeout: %v %v", r, err)
	}
	open := &pool.Error{Kind: pool.ErrCircuitOpen, Cluster: "x", RetryAt: time.Now().Add(-time.Second)}
	if r, err := Requeue(open); err != nil || r.RequeueAfter <= 0 {
		t.Errorf("open breaker due now: %v %v (RequeueAfter must stay positive)", r, err)
	}
	failed := &pool.Error{Kind: pool.ErrDialFailed, Cluster: "x", Cause: errors.New("refused"), RetryAt: time.Now().Add(time.Second)}
	if r, err := Requeue(failed); err != nil || r.RequeueAfter <= 0 || r.RequeueAfter > time.Second {
		t.Errorf("dial failed: %v %v, want a requeue after its RetryAfter", r, err)
	}
	other := errors.New("boom")
	if _, err := Requeue(other); err != other {
		t.Errorf("other errors pass through: %v", err)
	}
}
