package kube

import (
	"context"
	"errors"
	"maps"
	"slices"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/rest"
	toolscache "k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/config"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/clusterpool/clusterpool/breaker"
	"github.com/clusterpool/clusterpool/pool"
)

// The decisions of one reconcile, on a fake management cluster whose
// "Cluster" type is a ConfigMap: gone or refused → Remove and not
// admitted; being deleted stays admitted, as in ClusterCache; admitted →
// remembered and, with Connect, one Pool.Connect with no State read
// first (the pool dials only when nothing is connected, dialing or
// backing off: TestAdmissionConnectsThroughThePool).
func TestAdmissionReconcile(t *testing.T) {
	now := metav1.Now()
	cm := func(name string, labels map[string]string) *corev1.ConfigMap {
		return &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "f", Name: name, Labels: labels}}
	}
	deleting := cm("deleting", map[string]string{"pool": "ours"})
	deleting.DeletionTimestamp, deleting.Finalizers = &now, []string{"test"}
	reader := fake.NewClientBuilder().WithObjects(deleting, cm("refused", nil),
		cm("new", map[string]string{"pool": "ours"}), cm("connected", map[string]string{"pool": "ours"}),
		cm("open", map[string]string{"pool": "ours"}), cm("failed", map[string]string{"pool": "ours"})).Build()
	fp := newFakePool()
	key := func(name string) client.ObjectKey { return client.ObjectKey{Namespace: "f", Name: name} }
	a := &Admission{Pool: fp, Object: &corev1.ConfigMap{}, Connect: true, reader: reader,
		Admit: func(obj client.Object) bool { return obj.GetLabels()["pool"] == "ours" }}

	for _, tc := range []struct {
		name     string
		admitted bool
		calls    []string
	}{
		{"gone", false, []string{"remove f/gone"}},
		{"deleting", true, []string{"connect f/deleting"}},
		{"refused", false, []string{"remove f/refused"}},
		{"new", true, []string{"connect f/new"}},
		{"connected", true, []string{"connect f/connected"}},
		{"open", true, []string{"connect f/open"}},
		{"failed", true, []string{"connect f/failed"}},
	} {
		from := len(fp.callLog())
		if _, err := a.Reconcile(context.Background(), reconcile.Request{NamespacedName: key(tc.name)}); err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		if got := fp.callLog()[from:]; !slices.Equal(got, tc.calls) {
			t.Errorf("%s: calls %v, want %v", tc.name, got, tc.calls)
		}
		if got := a.Admitted(key(tc.name)); got != tc.admitted {
			t.Errorf("%s: Admitted %v, want %v", tc.name, got, tc.admitted)
		}
	}
	// An admitted cluster refused later is forgotten; without Connect,
	// nothing is dialed.
	a.Admit = func(client.Object) bool { return false }
	if _, err := a.Reconcile(context.Background(), reconcile.Request{NamespacedName: key("new")}); err != nil || a.Admitted(key("new")) {
		t.Fatalf("refused after admitted: err %v, Admitted %v", err, a.Admitted(key("new")))
	}
	a.Admit, a.Connect = nil, false
	from := len(fp.callLog())
	if _, err := a.Reconcile(context.Background(), reconcile.Request{NamespacedName: key("refused")}); err != nil || !a.Admitted(key("refused")) {
		t.Fatalf("nil Admit: err %v, Admitted %v", err, a.Admitted(key("refused")))
	}
	if got := fp.callLog()[from:]; len(got) != 0 {
		t.Fatalf("without Connect: calls %v", got)
	}
}

// Admission's Connect on a real pool: a new cluster and one whose last
// dial failed with the breaker closed are dialed; a connected one and one
// whose breaker is open are not (the backoff stands).
func TestAdmissionConnectsThroughThePool(t *testing.T) {
	var mu sync.Mutex
	dials := map[string]int{}
	stopped := make(chan struct{})
	close(stopped)
	dial := func(_ context.Context, key client.ObjectKey) (*Cluster, error) {
		mu.Lock()
		dials[key.Name]++
		mu.Unlock()
		if key.Name != "new" && key.Name != "connected" {
			return nil, errors.New("connection refused")
		}
		return &Cluster{Key: key, cancel: func() {}, done: stopped}, nil
	}
	p, err := pool.New(dial, pool.Options[client.ObjectKey, *Cluster]{MaxWait: time.Minute,
		Breaker: breaker.Settings{ConsecutiveFailures: 2, OpenTimeout: time.Hour}})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	key := func(name string) client.ObjectKey { return client.ObjectKey{Namespace: "f", Name: name} }
	for _, name := range []string{"connected", "open", "open", "failed"} {
		p.Get(context.Background(), key(name)) //nolint:errcheck // the states to start from
	}
	if p.State(key("open")).Breaker != breaker.StateOpen || p.State(key("failed")).ConsecutiveFailures != 1 {
		t.Fatalf("setup: open %+v, failed %+v", p.State(key("open")), p.State(key("failed")))
	}
	var objs []client.Object
	for _, name := range []string{"new", "connected", "open", "failed"} {
		objs = append(objs, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "f", Name: name}})
	}
	a := &Admission{Pool: p, Object: &corev1.ConfigMap{}, Connect: true, reader: fake.NewClientBuilder().WithObjects(objs...).Build()}
	ev := watchEvents(t, p)
	for _, name := range []string{"new", "connected", "open", "failed"} {
		if _, err := a.Reconcile(context.Background(), reconcile.Request{NamespacedName: key(name)}); err != nil {
			t.Fatal(err)
		}
	}
	ev.waitFor(t, 0, key("new"), connected(true), 10*time.Second)
	ev.waitFor(t, 0, key("failed"), func(e pool.Event[client.ObjectKey]) bool { return e.Type == pool.BreakerOpened }, 10*time.Second)
	if err := p.Close(); err != nil { // waits for every dialer
		t.Fatal(err)
	}
	mu.Lock()
	defer mu.Unlock()
	if want := map[string]int{"new": 1, "connected": 1, "open": 2, "failed": 2}; !maps.Equal(dials, want) {
		t.Fatalf("dials %v, want %v", dials, want)
	}
}

// Admitted is read on every GetClient of the drop-in while reconciles
// change it: safe for concurrent use (run with -race).
func TestAdmissionAdmittedConcurrent(t *testing.T) {
	fp := newFakePool()
	reader := fake.NewClientBuilder().WithObjects(&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "f", Name: "c"}}).Build()
	a := &Admission{Pool: fp, Object: &corev1.ConfigMap{}, reader: reader}
	k := client.ObjectKey{Namespace: "f", Name: "c"}
	var wg sync.WaitGroup
	for range 4 {
		wg.Go(func() {
			for range 200 {
				a.Admitted(k)
			}
		})
	}
	for range 50 {
		if _, err := a.Reconcile(context.Background(), reconcile.Request{NamespacedName: k}); err != nil {
			t.Fatal(err)
		}
	}
	wg.Wait()
	if !a.Admitted(k) {
		t.Fatal("not admitted")
	}
}

var installClusterCRD = sync.OnceValue(func() error {
	_, err := envtest.InstallCRDs(mgmtCfg, envtest.CRDInstallOptions{Paths: []string{"../examples/capi/config/crd"},
		ErrorIfPathMissing: true})
	return err
})

// capiCluster returns an unstructured Cluster API v1beta2 Cluster.
func capiCluster(ns, name string) *unstructured.Unstructured {
	u := &unstructured.Unstructured{}
	u.SetGroupVersionKind(schema.GroupVersionKind{Group: "cluster.x-k8s.io", Version: "v1beta2", Kind: "Cluster"})
	u.SetNamespace(ns)
	u.SetName(name)
	return u
}

// startAdmission runs a manager on the management cluster with a, until
// the end of the test.
func startAdmission(t *testing.T, a *Admission) {
	t.Helper()
	mgr, err := manager.New(mgmtCfg, manager.Options{Metrics: metricsserver.Options{BindAddress: "0"}})
	if err != nil {
		t.Fatal(err)
	}
	if err := a.SetupWithManager(mgr, controller.Options{}); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- mgr.Start(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Error(err)
		}
	})
}

// On a real apiserver with Cluster API's Cluster CRD, read unstructured:
// a Cluster is admitted (and dialed) once Admit accepts it, removed when a
// change makes Admit refuse it, kept while it is being deleted, and
// removed when it is gone. A second
// Admission of the same kind in the same process does not collide with
// the first's controller name.
func TestAdmissionClusterObjects(t *testing.T) {
	needEnvtest(t)
	if err := installClusterCRD(); err != nil {
		t.Fatal(err)
	}
	const ns = "admission"
	if err := mgmt.Create(context.Background(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}); err != nil && !isAlreadyExists(err) {
		t.Fatal(err)
	}
	fp := newFakePool()
	a := &Admission{Pool: fp, Object: capiCluster("", ""), Connect: true, Admit: func(obj client.Object) bool {
		provisioned, _, _ := unstructured.NestedBool(obj.(*unstructured.Unstructured).Object,
			"status", "initialization", "infrastructureProvisioned")
		return obj.GetLabels()["pool"] == "ours" && provisioned
	}}
	startAdmission(t, a)
	startAdmission(t, &Admission{Pool: newFakePool(), Object: capiCluster("", "")})

	ctx := context.Background()
	cl := capiCluster(ns, "c1")
	cl.SetLabels(map[string]string{"pool": "ours"})
	must(t, unstructured.SetNestedMap(cl.Object, map[string]any{"host": "127.0.0.1", "port": int64(6443)},
		"spec", "controlPlaneEndpoint"))
	key := client.ObjectKeyFromObject(cl)
	// Each step, then the call it causes and whether the cluster is admitted
	// after it.
	for _, step := range []struct {
		name     string
		do       func() error
		call     string
		admitted bool
	}{
		{"created, not provisioned", func() error { return mgmt.Create(ctx, cl) }, "remove", false},
		{"provisioned", func() error {
			must(t, unstructured.SetNestedField(cl.Object, true, "status", "initialization", "infrastructureProvisioned"))
			return mgmt.Status().Update(ctx, cl)
		}, "connect", true},
		{"filtered out", func() error { cl.SetLabels(map[string]string{"pool": "theirs"}); return mgmt.Update(ctx, cl) }, "remove", false},
		{"filtered in, with a finalizer", func() error {
			cl.SetLabels(map[string]string{"pool": "ours"})
			cl.SetFinalizers([]string{"test.clusterpool.io/hold"})
			return mgmt.Update(ctx, cl)
		}, "connect", true},
		{"being deleted", func() error { return mgmt.Delete(ctx, cl) }, "connect", true},
		{"gone", func() error {
			must(t, mgmt.Get(ctx, key, cl))
			cl.SetFinalizers(nil)
			return mgmt.Update(ctx, cl)
		}, "remove", false},
	} {
		from := len(fp.callLog())
		must(t, step.do())
		fp.waitCalls(t, from, step.call+" "+key.String(), 30*time.Second)
		if got := a.Admitted(key); got != step.admitted {
			t.Fatalf("%s: Admitted %v, want %v", step.name, got, step.admitted)
		}
	}
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// SetupWithManager refuses a missing Pool or Object, naming the field.
func TestAdmissionSetupValidation(t *testing.T) {
	mgr, err := manager.New(&rest.Config{Host: "https://127.0.0.1:1"}, manager.Options{Metrics: metricsserver.Options{BindAddress: "0"}})
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		a    *Admission
		want string
	}{
		{&Admission{Object: &corev1.ConfigMap{}}, "Admission.Pool must not be nil"},
		{&Admission{Pool: newFakePool()}, "Admission.Object: must not be nil"},
		{&Admission{Pool: newFakePool(), Object: &unstructured.Unstructured{}}, "Admission.Object: *unstructured.Unstructured is not a known kind"},
	} {
		err := tc.a.SetupWithManager(mgr, controller.Options{})
		if !errors.Is(err, ErrInvalidOptions) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("got %v, want %q matching ErrInvalidOptions", err, tc.want)
		}
	}
}

// Two Admissions of one name on one manager (Cluster API's tests set up
// several ClusterCaches on one manager, names unchecked) each add their
// own UID index: no indexer conflict.
func TestAdmissionSetupTwiceOnOneManager(t *testing.T) {
	needEnvtest(t)
	skip := true
	mgr, err := manager.New(mgmtCfg, manager.Options{Metrics: metricsserver.Options{BindAddress: "0"},
		Controller: config.Controller{SkipNameValidation: &skip}})
	if err != nil {
		t.Fatal(err)
	}
	for i := range 2 {
		a := &Admission{Pool: newFakePool(), Object: &corev1.ConfigMap{}, Name: "same"}
		if err := a.SetupWithManager(mgr, controller.Options{}); err != nil {
			t.Fatalf("Admission %d: %v", i, err)
		}
	}
}

// A Cluster deleted and created again under its name, its delete and
// create seen as one reconcile (one queue item per name; a relist after a
// broken watch), is a new cluster: the old one's client is removed from
// the pool before the new one connects. The same object reconciled again
// removes nothing.
func TestAdmissionNewUIDRemovesTheOldCluster(t *testing.T) {
	obj := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "f", Name: "c", UID: "uid-1"}}
	reader := fake.NewClientBuilder().WithObjects(obj).Build()
	fp := newFakePool()
	a := &Admission{Pool: fp, Object: &corev1.ConfigMap{}, Connect: true, reader: reader}
	req := reconcile.Request{NamespacedName: client.ObjectKey{Namespace: "f", Name: "c"}}
	reconcileCalls := func() []string {
		t.Helper()
		from := len(fp.callLog())
		if _, err := a.Reconcile(context.Background(), req); err != nil {
			t.Fatal(err)
		}
		return fp.callLog()[from:]
	}
	if got := reconcileCalls(); !slices.Equal(got, []string{"connect f/c"}) {
		t.Fatalf("first incarnation: calls %v", got)
	}
	if got := reconcileCalls(); !slices.Equal(got, []string{"connect f/c"}) {
		t.Fatalf("same incarnation again: calls %v, want no remove", got)
	}
	if err := reader.Delete(context.Background(), obj); err != nil {
		t.Fatal(err)
	}
	again := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "f", Name: "c", UID: "uid-2"}}
	if err := reader.Create(context.Background(), again); err != nil {
		t.Fatal(err)
	}
	if got := reconcileCalls(); !slices.Equal(got, []string{"remove f/c", "connect f/c"}) {
		t.Fatalf("re-created under its name: calls %v, want the old cluster removed, then the new connected", got)
	}
	if !a.Admitted(req.NamespacedName) {
		t.Fatal("the new incarnation is not admitted")
	}
}

// A Cluster records the UID admitted when its dial began; once the object
// under its name in the manager's cache has another UID (deleted and
// created again, not reconciled yet) it is not current, and Admission then
// removes it. The object deleted, or a Cluster recording no UID, is
// current. A delete event of the old object after the new one was written
// forgets nothing. (The cache's index and delete handler feed cachedUIDs;
// TestGetClientRefusesARecreatedClustersOldClient in clusterapi runs them
// on a real manager.)
func TestAdmissionCurrent(t *testing.T) {
	key := client.ObjectKey{Namespace: "f", Name: "c"}
	incarnation := func(uid types.UID) *corev1.ConfigMap {
		return &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: key.Namespace, Name: key.Name, UID: uid}}
	}
	reader := fake.NewClientBuilder().WithObjects(incarnation("uid-1")).Build()
	a := &Admission{Pool: newFakePool(), Object: &corev1.ConfigMap{}, reader: reader}
	a.cached.record(incarnation("uid-1"))
	if _, err := a.Reconcile(context.Background(), reconcile.Request{NamespacedName: key}); err != nil {
		t.Fatal(err)
	}
	if got := a.UID(key); got != "uid-1" {
		t.Fatalf("UID %q, want uid-1", got)
	}
	old := &Cluster{Key: key, UID: a.UID(key)}
	if !a.Current(old) || !a.Current(&Cluster{Key: key}) {
		t.Fatal("the admitted incarnation's Cluster is not current")
	}
	a.cached.record(incarnation("uid-2"))                                                         // created again
	a.cached.onDelete(toolscache.DeletedFinalStateUnknown{Key: "f/c", Obj: incarnation("uid-1")}) // the old delete, late
	if a.Current(old) {
		t.Fatal("the deleted incarnation's Cluster is current after the object was created again")
	}
	if !a.Current(&Cluster{Key: key, UID: "uid-2"}) || !a.Current(&Cluster{Key: key}) {
		t.Fatal("the new incarnation's Cluster, or one without a UID, is not current")
	}
	a.cached.onDelete(incarnation("uid-2"))
	if !a.Current(old) {
		t.Fatal("a Cluster whose object is gone is not current until Admission removes it")
	}
	var none *Admission
	if !none.Current(&Cluster{Key: key, UID: "uid-1"}) {
		t.Fatal("a nil Admission holds a Cluster stale")
	}
}

// With SetRetry, the Reconciler whose Admission it is connects an
// admitted cluster the retry after each of its failed dials; other events,
// and clusters not admitted, connect nothing; and a reconcile asks the
// pool to connect a cluster it holds no client for, never a connected one.
func TestAdmissionRetriesAFailedDial(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		key := func(name string) client.ObjectKey { return client.ObjectKey{Namespace: "f", Name: name} }
		fp := newFakePool()
		a := &Admission{Pool: fp, Connect: true}
		a.admitted.Store(key("a"), types.UID("a"))
		a.SetRetry(5 * time.Second)
		stopped := make(chan error)
		go func() { stopped <- (&Reconciler{Admission: a}).run(context.Background(), fp, &records{}) }()
		for _, ev := range []pool.Event[client.ObjectKey]{{Key: key("a"), Type: pool.Connected},
			{Key: key("b"), Type: pool.DialFailed}, {Key: key("a"), Type: pool.DialFailed}} {
			fp.events <- ev
		}
		time.Sleep(5*time.Second - time.Millisecond)
		synctest.Wait()
		if got := fp.callLog(); len(got) != 0 {
			t.Fatalf("pool calls %v before the retry", got)
		}
		time.Sleep(time.Millisecond)
		synctest.Wait()
		if got, want := fp.callLog(), []string{"connect f/a"}; !slices.Equal(got, want) {
			t.Fatalf("pool calls %v after the retry, want %v", got, want)
		}
		close(fp.events) // the pool closed: the reconciler stops
		if err := <-stopped; err != nil {
			t.Fatal(err)
		}
	})
	fp := newFakePool()
	fp.connect(&Cluster{Key: client.ObjectKey{Namespace: "f", Name: "up"}})
	objs := []client.Object{&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "f", Name: "up", UID: "up"}},
		&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "f", Name: "down", UID: "down"}}}
	a := &Admission{Pool: fp, Object: &corev1.ConfigMap{}, Connect: true, reader: fake.NewClientBuilder().WithObjects(objs...).Build()}
	for _, name := range []string{"up", "down"} {
		if _, err := a.Reconcile(context.Background(), reconcile.Request{NamespacedName: client.ObjectKey{Namespace: "f", Name: name}}); err != nil {
			t.Fatal(err)
		}
	}
	if got, want := fp.callLog(), []string{"connect f/down"}; !slices.Equal(got, want) {
		t.Errorf("pool calls %v, want %v", got, want)
	}
}
