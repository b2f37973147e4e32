package kube

import (
	"context"
	"errors"
	"net/http"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/apiutil"
	"sigs.k8s.io/controller-runtime/pkg/envtest"

	"github.com/clusterpool/clusterpool/internal/restmapper"
)

var (
	configMapKind = schema.GroupKind{Kind: "ConfigMap"}
	gadgetKind    = schema.GroupKind{Group: "mappertest.clusterpool.io", Kind: "Gadget"}
)

// serversSource hands out the management apiserver's config for keys in
// namespace "mgmt" and the workload apiserver's for the others.
func serversSource() ConfigSource {
	return ConfigFunc(func(_ context.Context, key client.ObjectKey) (*rest.Config, error) {
		if key.Namespace == "mgmt" {
			return rest.CopyConfig(mgmtCfg), nil
		}
		return rest.CopyConfig(workCfg), nil
	})
}

// dialDirect dials key with a new Dialer's Dial (no pool) and stops the
// Cluster at the end of the test.
func dialDirect(t *testing.T, d *Dialer, key client.ObjectKey) *Cluster {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	c, err := d.Dial(ctx, key)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Stop)
	return c
}

func newTestDialer(t *testing.T, src ConfigSource, opts DialerOptions) *Dialer {
	t.Helper()
	d, err := NewDialer(src, opts)
	if err != nil {
		t.Fatal(err)
	}
	return d
}

// mapperOf is c's default RESTMapper; its cached client has the same.
func mapperOf(t *testing.T, c *Cluster) *restmapper.Mapper {
	t.Helper()
	m, ok := c.Uncached.RESTMapper().(*restmapper.Mapper)
	if !ok || c.Client.RESTMapper() != meta.RESTMapper(m) {
		t.Fatalf("%s: RESTMappers %T and %T, want one *restmapper.Mapper", c, c.Uncached.RESTMapper(), c.Client.RESTMapper())
	}
	return m
}

// wantScope fails the test unless gk maps to scope on c.
func wantScope(t *testing.T, c *Cluster, gk schema.GroupKind, scope meta.RESTScopeName) {
	t.Helper()
	rm, err := mapperOf(t, c).RESTMapping(gk)
	if err != nil {
		t.Fatalf("%s: RESTMapping(%v): %v", c, gk, err)
	}
	if rm.Scope.Name() != scope {
		t.Fatalf("%s: %v maps to scope %s, want %s", c, gk, rm.Scope.Name(), scope)
	}
}

// installGadgets installs Gadget namespaced on the management apiserver and
// cluster-scoped on the workload one, waits until both serve it in their
// aggregated discovery, and deletes both at the end of the test.
func installGadgets(t *testing.T) {
	t.Helper()
	for cfg, dir := range map[*rest.Config]string{mgmtCfg: "testdata/mapper/namespaced", workCfg: "testdata/mapper/cluster"} {
		opts := envtest.CRDInstallOptions{Paths: []string{dir}, ErrorIfPathMissing: true}
		if _, err := envtest.InstallCRDs(cfg, opts); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() {
			if err := envtest.UninstallCRDs(cfg, opts); err != nil {
				t.Error(err)
			}
		})
		waitAggregated(t, cfg, schema.GroupVersion{Group: gadgetKind.Group, Version: "v1"})
	}
}

// waitAggregated polls cfg's aggregated discovery (which the apiserver
// updates after the CRD's own endpoint) until it lists gv.
func waitAggregated(t *testing.T, cfg *rest.Config, gv schema.GroupVersion) {
	t.Helper()
	dc, err := discovery.NewDiscoveryClientForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(30 * time.Second)
	for {
		_, res, _, err := dc.GroupsAndMaybeResources()
		if err == nil && res[gv] != nil {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s not in the aggregated discovery of %s: %v", gv, cfg.Host, err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// TestDiscoveryMapperSharesOnlySameDiscovery: clusters reporting the same
// discovery share one mapping; a CRD installed after the dial is found;
// a kind of one group and name but another scope on another cluster maps
// to that cluster's scope.
func TestDiscoveryMapperSharesOnlySameDiscovery(t *testing.T) {
	needEnvtest(t)
	d := newTestDialer(t, serversSource(), DialerOptions{})
	a := dialDirect(t, d, client.ObjectKey{Namespace: "mgmt", Name: "a"})
	b1 := dialDirect(t, d, client.ObjectKey{Namespace: "work", Name: "b1"})
	b2 := dialDirect(t, d, client.ObjectKey{Namespace: "work", Name: "b2"})
	for _, c := range []*Cluster{a, b1, b2} {
		wantScope(t, c, configMapKind, meta.RESTScopeNameNamespace)
	}
	shared := mapperOf(t, b1).Current()
	if mapperOf(t, b2).Current() != shared {
		t.Fatal("two clusters of one apiserver do not share a mapping")
	}
	if _, err := mapperOf(t, b1).RESTMapping(gadgetKind); !meta.IsNoMatchError(err) {
		t.Fatalf("Gadget before its CRD: %v, want a no-match error", err)
	}

	installGadgets(t)
	wantScope(t, a, gadgetKind, meta.RESTScopeNameNamespace)
	wantScope(t, b1, gadgetKind, meta.RESTScopeNameRoot)
	if mapperOf(t, a).Current() == mapperOf(t, b1).Current() {
		t.Fatal("clusters mapping Gadget to different scopes share a mapping")
	}
	if mapperOf(t, b2).Current() != shared {
		t.Fatal("b2 changed mapping without a lookup of its own")
	}
	wantScope(t, b2, gadgetKind, meta.RESTScopeNameRoot)
	if mapperOf(t, b2).Current() != mapperOf(t, b1).Current() {
		t.Fatal("b1 and b2 do not share their new mapping")
	}
}

// TestDiscoveryMapperReadsDiscoveryOnce: concurrent first lookups read
// the discovery once; a first lookup that finds no match reads it once;
// a later one reads it again.
func TestDiscoveryMapperReadsDiscoveryOnce(t *testing.T) {
	needEnvtest(t)
	var reads atomic.Int32
	src := transportSource{ConfigSource: serversSource(), wrap: func(rt http.RoundTripper) http.RoundTripper {
		return roundTripFunc(func(req *http.Request) (*http.Response, error) {
			if req.URL.Path == "/apis" {
				reads.Add(1)
			}
			return rt.RoundTrip(req)
		})
	}}
	d := newTestDialer(t, src, DialerOptions{})
	c := dialDirect(t, d, client.ObjectKey{Namespace: "work", Name: "once"})
	if n := reads.Load(); n != 0 {
		t.Fatalf("the dial read the discovery %d times, want 0 (no lookup yet)", n)
	}
	m := mapperOf(t, c)
	start := make(chan struct{})
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			<-start
			if _, err := m.RESTMapping(configMapKind); err != nil {
				t.Error(err)
			}
		})
	}
	close(start)
	wg.Wait()
	if n := reads.Load(); n != 1 {
		t.Fatalf("8 concurrent first lookups read the discovery %d times, want 1", n)
	}

	missing := schema.GroupKind{Group: "nothing.clusterpool.io", Kind: "Nothing"}
	fresh := dialDirect(t, d, client.ObjectKey{Namespace: "work", Name: "fresh"})
	for want := int32(2); want <= 3; want++ {
		if _, err := mapperOf(t, fresh).RESTMapping(missing); !meta.IsNoMatchError(err) {
			t.Fatalf("RESTMapping(%v): %v, want a no-match error", missing, err)
		}
		if n := reads.Load(); n != want {
			t.Fatalf("after a lookup finding no match: %d discovery reads, want %d", n, want)
		}
	}
}

// TestDiscoveryMapperWithoutAggregatedDiscovery: a server answering
// discovery in the legacy format (here the real apiserver, asked without
// the aggregated media type) gets a dynamic RESTMapper of its own, and its
// dial with WatchTypes syncs.
func TestDiscoveryMapperWithoutAggregatedDiscovery(t *testing.T) {
	needEnvtest(t)
	src := transportSource{ConfigSource: serversSource(), wrap: func(rt http.RoundTripper) http.RoundTripper {
		return roundTripFunc(func(req *http.Request) (*http.Response, error) {
			if req.URL.Path == "/api" || req.URL.Path == "/apis" {
				req = req.Clone(req.Context())
				req.Header.Set("Accept", "application/json")
			}
			return rt.RoundTrip(req)
		})
	}}
	d := newTestDialer(t, src, DialerOptions{WatchTypes: []client.Object{&corev1.Node{}}})
	c := dialDirect(t, d, client.ObjectKey{Namespace: "work", Name: "legacy"})
	wantScope(t, c, configMapKind, meta.RESTScopeNameNamespace)
	if s := mapperOf(t, c).Current(); !s.Dynamic {
		t.Fatal("a legacy discovery got a shared mapping, want a dynamic RESTMapper")
	}
	if n := d.mappers.Len(); n != 0 {
		t.Fatalf("%d shared mappings, want none", n)
	}
}

// TestDialerMapperProvider: a MapperProvider builds each dial's mapper;
// its error fails the dial.
func TestDialerMapperProvider(t *testing.T) {
	needEnvtest(t)
	var calls atomic.Int32
	dynamic := func(cfg *rest.Config, hc *http.Client) (meta.RESTMapper, error) {
		calls.Add(1)
		return apiutil.NewDynamicRESTMapper(cfg, hc)
	}
	d := newTestDialer(t, serversSource(), DialerOptions{MapperProvider: dynamic, WatchTypes: []client.Object{&corev1.Node{}}})
	c := dialDirect(t, d, client.ObjectKey{Namespace: "work", Name: "provided"})
	if _, ok := c.Uncached.RESTMapper().(*restmapper.Mapper); ok || calls.Load() != 1 {
		t.Fatalf("mapper %T after %d calls, want the provider's after 1", c.Uncached.RESTMapper(), calls.Load())
	}
	var nodes corev1.NodeList
	if err := c.Client.List(context.Background(), &nodes); err != nil {
		t.Fatal(err)
	}

	boom := errors.New("no mapper")
	d = newTestDialer(t, serversSource(), DialerOptions{MapperProvider: func(*rest.Config, *http.Client) (meta.RESTMapper, error) {
		return nil, boom
	}})
	if c, err := d.Dial(context.Background(), client.ObjectKey{Namespace: "work", Name: "failed"}); !errors.Is(err, boom) {
		if c != nil {
			c.Stop()
		}
		t.Fatalf("Dial: %v, want the provider's error", err)
	}
}

// TestDiscoveryMapperAllMethods: every RESTMapper method of a cluster's
// default mapper answers as the mapping does.
func TestDiscoveryMapperAllMethods(t *testing.T) {
	needEnvtest(t)
	d := newTestDialer(t, serversSource(), DialerOptions{})
	m := mapperOf(t, dialDirect(t, d, client.ObjectKey{Namespace: "work", Name: "methods"}))
	if s, err := m.ResourceSingularizer("configmaps"); err != nil || s != "configmap" {
		t.Fatalf("ResourceSingularizer: %q, %v", s, err)
	}
	cm := schema.GroupVersionResource{Version: "v1", Resource: "configmaps"}
	gvk, err := m.KindFor(cm)
	if err != nil || gvk.Kind != "ConfigMap" {
		t.Fatalf("KindFor: %v, %v", gvk, err)
	}
	if gvks, err := m.KindsFor(cm); err != nil || !slices.Contains(gvks, gvk) {
		t.Fatalf("KindsFor: %v, %v", gvks, err)
	}
	if r, err := m.ResourceFor(schema.GroupVersionResource{Resource: "configmap"}); err != nil || r != cm {
		t.Fatalf("ResourceFor: %v, %v", r, err)
	}
	if rs, err := m.ResourcesFor(schema.GroupVersionResource{Resource: "configmaps"}); err != nil || !slices.Contains(rs, cm) {
		t.Fatalf("ResourcesFor: %v, %v", rs, err)
	}
	if rms, err := m.RESTMappings(configMapKind, "v1"); err != nil || len(rms) != 1 || rms[0].Resource != cm {
		t.Fatalf("RESTMappings: %v, %v", rms, err)
	}
}
