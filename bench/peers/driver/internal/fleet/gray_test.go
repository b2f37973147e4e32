package fleet

import (
	"context"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// StartGray points each Cluster's kubeconfig Secret at its own grayproxy:
// a client built from the Secret reaches the workload apiserver through
// it (the admin certificate impersonated), the other Cluster's proxy sees
// nothing, and Set faults exactly the requests the proxy counts as
// faulted, until Pass.
func TestStartGrayRoutesEachClusterThroughItsProxy(t *testing.T) {
	ctx := t.Context()
	root, err := RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	f, err := Start(ctx, root, 2, 1, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Stop()
	g, err := f.StartGray(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer g.Close()
	get := secretClient(ctx, t, f, g, 1)
	if err := get(); err != nil { // with the client's lazy discovery
		t.Fatalf("through the proxy: %v", err)
	}
	passed := g.Proxies[1].Total().Passed
	if err := get(); err != nil {
		t.Fatal(err)
	}
	if n := g.Proxies[1].Total().Passed - passed; n != 1 {
		t.Fatalf("c001's proxy passed %d requests for one Get, want 1", n)
	}
	if n := g.Proxies[0].Total().Received(); n != 0 {
		t.Fatalf("c000's proxy received %d requests, want 0", n)
	}
	faults := GrayFaults{SlowFactor: 10, ThrottleRate: 0.5, RetryAfter: time.Second}
	if err := g.Set([]GrayClass{"", GrayErrors60}, faults, 1); err != nil {
		t.Fatal(err)
	}
	failed := countServerErrors(t, get, 20)
	if faulted := g.Proxies[1].Total().Faulted; failed < 10 || failed > 14 || uint64(failed) != faulted {
		t.Fatalf("%d of 20 failed, the proxy faulted %d; want 12 within two, the same", failed, faulted)
	}
	if err := g.Pass(); err != nil {
		t.Fatal(err)
	}
	if err := get(); err != nil {
		t.Fatalf("after Pass: %v", err)
	}
}

// secretClient returns a Get of the default namespace with a client built
// from Cluster i's kubeconfig Secret, checking that it names i's proxy.
func secretClient(ctx context.Context, t *testing.T, f *Fleet, g *Gray, i int) func() error {
	t.Helper()
	s := &corev1.Secret{}
	if err := f.Mgmt.Get(ctx, client.ObjectKey{Namespace: Namespace, Name: f.Names[i] + "-kubeconfig"}, s); err != nil {
		t.Fatal(err)
	}
	cfg, err := clientcmd.RESTConfigFromKubeConfig(s.Data["value"])
	if err != nil {
		t.Fatal(err)
	}
	if want := g.Proxies[i].URL(); cfg.Host != want {
		t.Fatalf("%s's kubeconfig names %s, want its proxy %s", f.Names[i], cfg.Host, want)
	}
	cfg.Timeout = 10 * time.Second
	c, err := client.New(cfg, client.Options{})
	if err != nil {
		t.Fatal(err)
	}
	return func() error { return c.Get(ctx, client.ObjectKey{Name: "default"}, &corev1.Namespace{}) }
}

// countServerErrors calls get n times and returns how many answered 500
// or 503, failing the test on any other error.
func countServerErrors(t *testing.T, get func() error, n int) int {
	t.Helper()
	failed := 0
	for range n {
		switch err := get(); {
		case apierrors.IsInternalError(err) || apierrors.IsServiceUnavailable(err):
			failed++
		case err != nil:
			t.Fatalf("a request failed otherwise: %v", err)
		}
	}
	return failed
}
