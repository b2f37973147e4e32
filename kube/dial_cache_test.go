package kube

import (
	"context"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/clusterpool/clusterpool/pool"
)

// recordingSource records every request of the configs it hands out as
// "GET /api/v1/namespaces/x/configmaps/y?query".
type recordingSource struct {
	mu   sync.Mutex
	reqs []string
}

func (s *recordingSource) source(src ConfigSource) ConfigSource {
	return transportSource{ConfigSource: src, wrap: func(rt http.RoundTripper) http.RoundTripper {
		return roundTripFunc(func(req *http.Request) (*http.Response, error) {
			s.mu.Lock()
			s.reqs = append(s.reqs, req.Method+" "+req.URL.Path+"?"+req.URL.RawQuery)
			s.mu.Unlock()
			return rt.RoundTrip(req)
		})
	}}
}

// matching returns the recorded requests whose path ends with suffix.
func (s *recordingSource) matching(suffix string) []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []string
	for _, r := range s.reqs {
		if path, _, _ := strings.Cut(r, "?"); strings.HasSuffix(path, suffix) {
			out = append(out, r)
		}
	}
	return out
}

// workObjects creates objs in the workload cluster, in namespace ns.
func workObjects(t *testing.T, ns string, objs ...client.Object) {
	t.Helper()
	ctx := context.Background()
	w, err := client.New(workCfg, client.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}); err != nil && !isAlreadyExists(err) {
		t.Fatal(err)
	}
	for _, o := range objs {
		o.SetNamespace(ns)
		if err := w.Create(ctx, o); err != nil && !isAlreadyExists(err) {
			t.Fatal(err)
		}
	}
}

// The cache options of ClusterCache, on a real apiserver: an index is
// usable as soon as the dial returns, a DisableFor type is read from the
// apiserver (no informer: no list, no watch), unstructured objects are read
// from the cache when Unstructured is set.
func TestDialCacheOptions(t *testing.T) {
	needEnvtest(t)
	const ns = "cache-options"
	workObjects(t, ns,
		&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "s1"}, StringData: map[string]string{"k": "v1"}},
		&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "s2"}, StringData: map[string]string{"k": "v2"}},
		&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "cm"}},
		&corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "sa"}})
	key := client.ObjectKey{Namespace: "fleet", Name: "cache-options"}
	putKubeconfig(t, key, kubeconfig(t, "", ""))
	src := &recordingSource{}
	p := newPoolWith(t, src.source(SecretSource{Reader: mgmt}), DialerOptions{
		DisableFor:   []client.Object{&corev1.ConfigMap{}},
		Unstructured: true,
		Indexes: []Index{{Object: &corev1.Secret{}, Field: "data.k", Extract: func(o client.Object) []string {
			return []string{string(o.(*corev1.Secret).Data["k"])}
		}}},
	}, pool.Options[client.ObjectKey, *Cluster]{MaxWait: 10 * time.Second})
	c := getEventually(t, p, key)
	ctx := context.Background()

	var secrets corev1.SecretList
	if err := c.Client.List(ctx, &secrets, client.InNamespace(ns), client.MatchingFields{"data.k": "v1"}); err != nil {
		t.Fatalf("List by index right after the dial: %v", err)
	}
	if len(secrets.Items) != 1 || secrets.Items[0].Name != "s1" {
		t.Fatalf("List by index: %d items, want s1 only", len(secrets.Items))
	}

	if err := c.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "cm"}, &corev1.ConfigMap{}); err != nil {
		t.Fatalf("Get of a DisableFor type: %v", err)
	}
	if got := src.matching("/configmaps"); len(got) != 0 {
		t.Fatalf("a DisableFor type was listed or watched: %v", got)
	}
	if got := src.matching("/configmaps/cm"); len(got) != 1 {
		t.Fatalf("the DisableFor Get was not sent to the apiserver once: %v", got)
	}

	sa := &unstructured.Unstructured{}
	sa.SetAPIVersion("v1")
	sa.SetKind("ServiceAccount")
	if err := c.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "sa"}, sa); err != nil {
		t.Fatalf("unstructured Get: %v", err)
	}
	if got := src.matching("/serviceaccounts/sa"); len(got) != 0 {
		t.Fatalf("an unstructured Get went to the apiserver with Unstructured set: %v", got)
	}
	if got := src.matching("/serviceaccounts"); !slices.ContainsFunc(got, func(r string) bool { return strings.HasPrefix(r, "GET ") }) {
		t.Fatalf("no informer listed ServiceAccounts for the unstructured Get: %v", got)
	}
}

// UserAgent reaches the apiserver: it names the field manager of an object
// the cluster's client creates (the apiserver takes the User-Agent up to
// its first "/"); empty keeps client-go's default.
func TestDialUserAgent(t *testing.T) {
	needEnvtest(t)
	const ns = "user-agent"
	workObjects(t, ns)
	key := client.ObjectKey{Namespace: "fleet", Name: "user-agent"}
	putKubeconfig(t, key, kubeconfig(t, "", ""))
	defaultManager, _, _ := strings.Cut(rest.DefaultKubernetesUserAgent(), "/")
	for _, tc := range []struct{ ua, manager string }{
		{"clusterpool-ua-test/v1.2.3 (linux/amd64)", "clusterpool-ua-test"},
		{"", defaultManager},
	} {
		p, _ := newTestPool(t, DialerOptions{UserAgent: tc.ua}, pool.Options[client.ObjectKey, *Cluster]{MaxWait: 10 * time.Second})
		c := getEventually(t, p, key)
		cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, GenerateName: "ua-"}}
		if err := c.Uncached.Create(context.Background(), cm); err != nil {
			t.Fatal(err)
		}
		mf := cm.GetManagedFields()
		if len(mf) != 1 || mf[0].Manager != tc.manager {
			t.Errorf("UserAgent %q: managed fields %+v, want manager %q", tc.ua, mf, tc.manager)
		}
		p.Close()
	}
}
