package kube

import (
	"context"
	"sync/atomic"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// countingReader counts its Gets.
type countingReader struct {
	client.Reader
	gets atomic.Int32
}

func (r *countingReader) Get(ctx context.Context, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
	r.gets.Add(1)
	return r.Reader.Get(ctx, key, obj, opts...)
}

// The chaos hour's crossed reads: a Cluster deleted and created again
// (another UID) with a new Secret naming another apiserver, while the
// Secret cache still serves the deleted Cluster's Secret. The first dial
// of the new UID reads the Secret live and reaches the new server; so do
// its later dials until the cache serves the same kubeconfig, after which
// dials read the cache again. Endpoint checks always read the cache; a
// Secret the live reader does not find fails the dial.
func TestNewIncarnationReadsItsSecretLive(t *testing.T) {
	oldSrv, newSrv := newAnyTokenServer(t), newAnyTokenServer(t)
	key := client.ObjectKey{Namespace: "fleet", Name: "c089"}
	cached, live := newSecretStore(t), newSecretStore(t)
	cached.put(key, tokenKubeconfig(t, oldSrv, "old"))
	cr, lr := &countingReader{Reader: cached.cl}, &countingReader{Reader: live.cl}
	var uid atomic.Value
	uid.Store(types.UID("uid-1"))
	d, err := NewDialer(SecretSource{Reader: cr, Live: lr},
		DialerOptions{ObjectUID: func(client.ObjectKey) types.UID { return uid.Load().(types.UID) }})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	// dial dials key and returns the server it reached and the Gets of
	// each reader during the dial.
	dial := func() (host string, cachedGets, liveGets int32, err error) {
		c0, l0 := cr.gets.Load(), lr.gets.Load()
		c, err := d.Dial(ctx, key)
		if err == nil {
			host = c.RESTConfig().Host
			c.Stop()
		}
		return host, cr.gets.Load() - c0, lr.gets.Load() - l0, err
	}
	expect := func(step, wantHost string, wantCached, wantLive int32) {
		t.Helper()
		host, c, l, err := dial()
		if err != nil {
			t.Fatalf("%s: %v", step, err)
		}
		if host != wantHost || c != wantCached || l != wantLive {
			t.Fatalf("%s: reached %s with %d cached and %d live Gets, want %s, %d and %d",
				step, host, c, l, wantHost, wantCached, wantLive)
		}
	}

	expect("the first dial in the process", oldSrv.srv.URL, 1, 0)
	expect("a redial of the same Cluster", oldSrv.srv.URL, 1, 0)

	// Deleted and created again; the new Secret is not created yet, and
	// the cache still holds the deleted one.
	uid.Store(types.UID("uid-2"))
	if _, c, l, err := dial(); !apierrors.IsNotFound(err) || c != 0 || l != 1 {
		t.Fatalf("the new Cluster's dial before its Secret exists: %v with %d cached and %d live Gets, want NotFound from 1 live Get", err, c, l)
	}
	live.put(key, tokenKubeconfig(t, newSrv, "new"))
	// Connected: the cache, read once more, still serves the old Secret.
	expect("the new Cluster's first dial", newSrv.srv.URL, 1, 1)
	expect("a redial while the cache lags", newSrv.srv.URL, 1, 1)
	if err := d.check(ctx, key); err != nil { // the revive check reads the cache
		t.Fatalf("endpoint check: %v", err)
	}
	if n := lr.gets.Load(); n != 3 {
		t.Fatalf("the endpoint check read live: %d live Gets in all, want 3", n)
	}

	cached.put(key, tokenKubeconfig(t, newSrv, "new")) // the cache catches up
	expect("the dial that finds the cache caught up", newSrv.srv.URL, 1, 1)
	expect("a redial once the cache caught up", newSrv.srv.URL, 1, 0)
}
