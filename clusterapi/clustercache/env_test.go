package clustercache_test

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/config"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	"github.com/clusterpool/clusterpool/clusterapi/clustercache"
	"github.com/clusterpool/clusterpool/internal/envtestutil"
	"github.com/clusterpool/clusterpool/internal/faultproxy"
	"github.com/clusterpool/clusterpool/kube"
)

// testEnv is one test's manager and ClusterCache on the suite's apiserver.
type testEnv struct {
	cfg *rest.Config
	mgr manager.Manager
	c   client.Client // uncached, for the test's own writes and reads
	ns  string
}

func newScheme(t testing.TB) *runtime.Scheme {
	s := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(s); err != nil {
		t.Fatal(err)
	}
	if err := clusterv1.AddToScheme(s); err != nil {
		t.Fatal(err)
	}
	return s
}

// newEnv returns a manager (not started) and a namespace of its own,
// named ns-<random>; the manager's cache holds that namespace only.
func newEnv(t testing.TB, ns string) *testEnv {
	t.Helper()
	return newEnvIn(t, ns, true)
}

// newEnvIn is newEnv; with own false the manager's cache holds every
// namespace, as Cluster API's does by default.
func newEnvIn(t testing.TB, ns string, own bool) *testEnv {
	t.Helper()
	cfg := suite.Need(t)[0]
	s := newScheme(t)
	c, err := client.New(cfg, client.Options{Scheme: s})
	if err != nil {
		t.Fatal(err)
	}
	nso := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: ns + "-"}}
	if err := c.Create(context.Background(), nso); err != nil {
		t.Fatal(err)
	}
	// With own, the manager sees its namespace only: earlier tests'
	// Clusters stay out of this test's ClusterCache.
	var copts cache.Options
	if own {
		copts.DefaultNamespaces = map[string]cache.Config{nso.Name: {}}
	}
	mgr, err := manager.New(cfg, manager.Options{Scheme: s, Metrics: metricsserver.Options{BindAddress: "0"},
		Cache: copts, Controller: config.Controller{SkipNameValidation: ptr.To(true)}})
	if err != nil {
		t.Fatal(err)
	}
	return &testEnv{cfg: cfg, mgr: mgr, c: c, ns: nso.Name}
}

// setup calls SetupWithManager with the options of Cluster API's tests.
// edit, if set, changes them.
func (e *testEnv) setup(t testing.TB, concurrency int, edit func(*clustercache.Options)) clustercache.ClusterCache {
	t.Helper()
	opts := clustercache.Options{
		SecretClient: e.mgr.GetClient(),
		Cache:        clustercache.CacheOptions{Indexes: []clustercache.CacheOptionsIndex{clustercache.NodeProviderIDIndex}},
		Client: clustercache.ClientOptions{UserAgent: "clustercache-test", Timeout: 10 * time.Second,
			Cache: clustercache.ClientCacheOptions{DisableFor: []client.Object{&corev1.ConfigMap{}, &corev1.Secret{}}}},
	}
	if edit != nil {
		edit(&opts)
	}
	cc, err := clustercache.SetupWithManager(context.Background(), e.mgr, opts, controller.Options{MaxConcurrentReconciles: concurrency})
	if err != nil {
		t.Fatal(err)
	}
	return cc
}

// start runs the manager until the test ends, or until stop is called,
// then shuts cc down and waits for the manager to stop.
func (e *testEnv) start(t testing.TB, cc clustercache.ClusterCache) (stop func()) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- e.mgr.Start(ctx) }()
	var once sync.Once
	stop = func() {
		once.Do(func() {
			cancel()
			cc.(interface{ Shutdown() }).Shutdown()
			if err := <-done; err != nil {
				t.Errorf("manager: %v", err)
			}
		})
	}
	t.Cleanup(stop)
	return stop
}

// kubeconfig returns a kubeconfig for the suite's apiserver, reached
// through server (host:port) if not empty.
func (e *testEnv) kubeconfig(t testing.TB, server string) []byte {
	t.Helper()
	kc, err := envtestutil.Kubeconfig(e.cfg, server, "")
	if err != nil {
		t.Fatal(err)
	}
	return kc
}

// hostPort is the apiserver's host:port.
func (e *testEnv) hostPort(t testing.TB) string {
	u, err := url.Parse(e.cfg.Host)
	if err != nil {
		t.Fatal(err)
	}
	return u.Host
}

// hold starts a proxy to the apiserver that accepts connections and never
// answers, until the test ends, and returns its address: the server of an
// unreachable cluster.
func (e *testEnv) hold(t testing.TB) string {
	t.Helper()
	return e.proxy(t, faultproxy.Hold).Addr()
}

// proxy starts a proxy to the apiserver in mode, closed when the test
// ends.
func (e *testEnv) proxy(t testing.TB, mode faultproxy.Mode) *faultproxy.Proxy {
	t.Helper()
	p, err := faultproxy.New(e.hostPort(t))
	if err != nil {
		t.Fatal(err)
	}
	p.SetMode(mode)
	t.Cleanup(func() { p.Close() })
	return p
}

// createCluster creates a Cluster and its kubeconfig Secret, with
// status.initialization.infrastructureProvisioned set to provisioned.
func (e *testEnv) createCluster(ctx context.Context, name string, kubeconfig []byte, provisioned bool) error {
	return e.createLabeled(ctx, name, kubeconfig, provisioned, nil)
}

// createLabeled is createCluster with labels on the Cluster.
func (e *testEnv) createLabeled(ctx context.Context, name string, kubeconfig []byte, provisioned bool, labels map[string]string) error {
	secret := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: e.ns, Name: kube.KubeconfigSecretName(name),
		Labels: map[string]string{clusterv1.ClusterNameLabel: name}},
		Data: map[string][]byte{kube.KubeconfigSecretKey: kubeconfig}}
	if err := e.c.Create(ctx, secret); err != nil {
		return fmt.Errorf("creating Secret: %w", err)
	}
	cluster := &clusterv1.Cluster{ObjectMeta: metav1.ObjectMeta{Namespace: e.ns, Name: name, Labels: labels},
		Spec: clusterv1.ClusterSpec{ControlPlaneEndpoint: clusterv1.APIEndpoint{Host: "127.0.0.1", Port: 6443}}}
	if err := e.c.Create(ctx, cluster); err != nil {
		return fmt.Errorf("creating Cluster: %w", err)
	}
	return e.setProvisioned(ctx, name, provisioned)
}

// setProvisioned sets status.initialization.infrastructureProvisioned.
func (e *testEnv) setProvisioned(ctx context.Context, name string, provisioned bool) error {
	cluster := &clusterv1.Cluster{}
	if err := e.c.Get(ctx, client.ObjectKey{Namespace: e.ns, Name: name}, cluster); err != nil {
		return err
	}
	cluster.Status.Initialization.InfrastructureProvisioned = ptr.To(provisioned)
	return e.c.Status().Update(ctx, cluster)
}

// eventually polls cond every 50ms until it returns nil, failing the test
// with its last error after timeout: for what happens in real time on a
// real apiserver (a generous bound, not a timing goal).
func eventually(t testing.TB, timeout time.Duration, cond func() error) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		err := cond()
		if err == nil {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("after %v: %v", timeout, err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// errNotYet is cond's error while waiting.
var errNotYet = errors.New("not yet")
