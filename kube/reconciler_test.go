package kube

import (
	"context"
	"errors"
	"net/http"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	"github.com/clusterpool/clusterpool/pool"
)

// countingPool counts the subscriptions to its events.
type countingPool struct {
	*fakePool
	subs atomic.Int32
}

func (c *countingPool) Subscribe(ctx context.Context) <-chan pool.Event[client.ObjectKey] {
	c.subs.Add(1)
	return c.fakePool.Subscribe(ctx)
}

// A Reconciler runs the watcher and the Prober on one subscription: the
// Prober probes a cluster connected before it (found once subscribed) and
// one whose Connected event comes later, and OnEvent gets each event,
// after OnSubscribed.
func TestReconcilerSharesOneSubscription(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		srv := &fakeAPIServer{origin: time.Now(), mode: "ok"}
		cp := &countingPool{fakePool: newFakePool()}
		done := make(chan struct{})
		close(done)
		cluster := func(name string) *Cluster {
			return &Cluster{Key: client.ObjectKey{Namespace: "f", Name: name}, config: &rest.Config{Host: "https://x.invalid"},
				httpClient: &http.Client{Transport: srv}, cancel: func() {}, done: done}
		}
		early, late := cluster("early"), cluster("late")
		cp.connect(early)
		var mu sync.Mutex
		var log []string
		note := func(s string) {
			mu.Lock()
			defer mu.Unlock()
			if !slices.Contains(log, s) {
				log = append(log, s)
			}
		}
		pr, err := NewProber(cp, ProberOptions{Interval: 10 * time.Second,
			Probed: func(key client.ObjectKey, _ error) { note("probed " + key.Name) }})
		if err != nil {
			t.Fatal(err)
		}
		r := &Reconciler{Secrets: &SecretWatcher{Informers: newFakeInformers(), Pool: cp}, Prober: pr,
			OnSubscribed: func() { note("subscribed") },
			OnEvent:      func(ev pool.Event[client.ObjectKey]) { note(ev.Type.String() + " " + ev.Key.Name) }}
		ctx, cancel := context.WithCancel(context.Background())
		stopped := make(chan error)
		go func() { stopped <- r.Start(ctx) }()
		at(srv.origin, 15*time.Second)
		cp.connect(late)
		cp.events <- pool.Event[client.ObjectKey]{Type: pool.Connected, Key: late.Key, Connected: true}
		at(srv.origin, 30*time.Second)
		cancel()
		if err := <-stopped; err != nil {
			t.Fatal(err)
		}
		want := []string{"subscribed", "probed early", "Connected late", "probed late"}
		if !slices.Equal(log, want) {
			t.Errorf("saw %v, want %v", log, want)
		}
		if n := cp.subs.Load(); n != 1 {
			t.Errorf("%d subscriptions to the pool's events, want 1", n)
		}
	})
}

// A Reconciler without Secrets does not start.
func TestReconcilerNeedsSecrets(t *testing.T) {
	if err := (&Reconciler{}).Start(context.Background()); !errors.Is(err, ErrInvalidOptions) {
		t.Errorf("Start = %v, want ErrInvalidOptions", err)
	}
}

// SetupWithManager wires the Admission's controller, its Admitted as the
// watcher's Admit, and the reconciler, in one call: an object created on
// the management cluster is admitted and connected.
func TestReconcilerSetupWithManager(t *testing.T) {
	needEnvtest(t)
	mgr, err := manager.New(mgmtCfg, manager.Options{Metrics: metricsserver.Options{BindAddress: "0"}})
	if err != nil {
		t.Fatal(err)
	}
	fp := newFakePool()
	w := &SecretWatcher{Informers: mgr.GetCache(), Pool: fp}
	a := &Admission{Pool: fp, Object: &corev1.ConfigMap{}, Connect: true}
	if err := (&Reconciler{Secrets: w, Admission: a}).SetupWithManager(mgr); err != nil {
		t.Fatal(err)
	}
	if w.Admit == nil {
		t.Fatal("the watcher's Admit is not the Admission's")
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- mgr.Start(ctx) }()
	defer func() {
		cancel()
		if err := <-done; err != nil {
			t.Error(err)
		}
	}()
	const ns = "reconciler-setup"
	if err := mgmt.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}); err != nil && !isAlreadyExists(err) {
		t.Fatal(err)
	}
	key := client.ObjectKey{Namespace: ns, Name: "c1"}
	if err := mgmt.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: key.Name}}); err != nil {
		t.Fatal(err)
	}
	waitUntil(t, 30*time.Second, "the object to be admitted and connected", func() bool {
		return w.Admit(key) && slices.Contains(fp.callLog(), "connect "+key.String())
	})
	if err := (&Reconciler{}).SetupWithManager(mgr); !errors.Is(err, ErrInvalidOptions) {
		t.Errorf("SetupWithManager without Secrets = %v, want ErrInvalidOptions", err)
	}
}
