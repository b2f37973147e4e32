package kube

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/record"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"

	"github.com/go-logr/logr/funcr"

	"github.com/clusterpool/clusterpool/internal/envtestutil"
	"github.com/clusterpool/clusterpool/internal/faultproxy"
	"github.com/clusterpool/clusterpool/pool"
)

// rotationEvery is the time between two rotations of the test; each phase
// (tokens, then client certificates) rotates rotationsPerPhase times, so
// the test rotates for about 2 × 6 × 2.5 s = 30 s.
const (
	rotationEvery     = 2500 * time.Millisecond
	rotationsPerPhase = 6
)

// A connected cluster whose kubeconfig Secret rotates, every few seconds,
// through bearer tokens and then client certificates of the apiserver's
// client CA, keeps its informers (no relist), stays connected (no
// Disconnected event, Peek always finds the same Cluster) and fails no
// request; a Secret the policy refuses in between changes nothing but is
// reported; at the end, with every earlier identity's RBAC binding
// revoked, no request of an earlier identity is still open at the
// apiserver. LISTs, watches and failures are counted in the apiserver's
// audit log, new connections at a TCP proxy.
func TestCredentialsRotateInPlace(t *testing.T) {
	f := newRotationFixture(t)
	informers, err := cache.New(f.e.cfg, cache.Options{HTTPClient: adminHTTP(t, f.e.cfg)})
	if err != nil {
		t.Fatal(err)
	}
	p := newPoolWith(t, SecretSource{Reader: informers}, DialerOptions{WatchTypes: []client.Object{&corev1.ConfigMap{}}},
		pool.Options[client.ObjectKey, *Cluster]{MaxWait: 10 * time.Second})
	ev := watchEvents(t, p)
	recorder := record.NewFakeRecorder(16)
	f.put(f.tokenKC(0))
	stop := runAll(t, informers, &SecretWatcher{Informers: informers, Pool: p, Recorder: recorder,
		Logger: funcr.New(func(prefix, args string) { t.Log(prefix, args) }, funcr.Options{Verbosity: 1})})
	defer stop()
	f.c = getEventually(t, p, f.key)
	evConnected := ev.waitFor(t, 0, f.key, connected(true), 30*time.Second)

	// The workload: a Get through the apiserver and a List from the cache,
	// back to back, and a ConfigMap written now and then that the cache
	// must see.
	load := startRotationLoad(t, p, f.key, f.c, f.admin)
	defer load.stop()
	since := time.Now()
	f.conns = []uint64{f.proxy.Accepted()}
	for i := 1; i <= rotationsPerPhase; i++ {
		f.rotate(f.tokenKC(i))
	}
	f.refused(recorder)
	for i := range rotationsPerPhase + 1 {
		f.rotate(f.certKC(i))
	}
	f.revokeAllBut(f.certUsers[rotationsPerPhase])
	time.Sleep(rotationEvery) // requests after the revocation
	res := load.stop()

	if got, ok := p.Peek(f.key); !ok || got != f.c {
		t.Errorf("after the rotations: connected=%v same Cluster=%v", ok, got == f.c)
	}
	for _, e := range ev.snapshot()[evConnected:] {
		t.Errorf("pool event during the rotations: %+v", e)
	}
	if res.notConnected != 0 || res.failed != 0 || res.missing != 0 {
		t.Errorf("%d of %d requests failed (%v), cluster not connected at %d of them; the cache missed %d of %d ConfigMaps",
			res.failed, res.requests, res.firstErr, res.notConnected, res.missing, res.written)
	}
	if open := f.openAfter(15*time.Second, f.certUsers[rotationsPerPhase]); len(open) != 0 {
		t.Errorf("requests of earlier identities still open at the apiserver: %v", open)
	}
	n := countSince(f.e.audit(t), since)
	t.Logf("%d rotations in %v: %d requests, %d failed; apiserver: %d LISTs, %d watch-lists, %d re-watches, %d answers >= 400; new connections per rotation %v",
		2*rotationsPerPhase+1, time.Since(since).Round(time.Second), res.requests, res.failed, n.lists, n.initialWatches, n.watches, n.failed, deltas(f.conns))
	if n.lists != 0 || n.initialWatches != 0 || n.failed != 0 {
		t.Errorf("relists %d (LIST) + %d (watch-list) %v, failed answers %d %v, want none", n.lists, n.initialWatches, n.relists, n.failed, n.failures)
	}
}

// rotationFixture is the apiserver, proxy and identities of the rotation
// test, and the cluster whose credentials rotate.
type rotationFixture struct {
	t                     *testing.T
	e                     *rotationEnv
	admin                 client.Client
	proxy                 *faultproxy.Proxy
	key                   client.ObjectKey
	tokenUsers, certUsers []string
	c                     *Cluster
	conns                 []uint64 // connections the proxy accepted, after each rotation
}

func newRotationFixture(t *testing.T) *rotationFixture {
	f := &rotationFixture{t: t, key: client.ObjectKey{Namespace: "default", Name: "rot"}}
	for i := range rotationsPerPhase + 1 {
		f.tokenUsers = append(f.tokenUsers, fmt.Sprintf("rot-token-%d", i))
		f.certUsers = append(f.certUsers, fmt.Sprintf("rot-cert-%d", i))
	}
	f.e = startRotationEnv(t, f.tokenUsers, f.certUsers)
	f.admin = adminClient(t, f.e.cfg)
	u, err := url.Parse(f.e.cfg.Host)
	if err != nil {
		t.Fatal(err)
	}
	if f.proxy, err = faultproxy.New(u.Host); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.proxy.Close() })
	return f
}

// put writes the cluster's kubeconfig Secret.
func (f *rotationFixture) put(kc []byte) {
	f.t.Helper()
	ctx := context.Background()
	s := kubeconfigSecret(f.key, string(kc))
	err := f.admin.Create(ctx, s)
	if isAlreadyExists(err) {
		var cur corev1.Secret
		if err = f.admin.Get(ctx, client.ObjectKeyFromObject(s), &cur); err == nil {
			cur.Data = s.Data
			err = f.admin.Update(ctx, &cur)
		}
	}
	if err != nil {
		f.t.Fatal(err)
	}
}

func (f *rotationFixture) tokenKC(i int) []byte {
	kc, err := envtestutil.Kubeconfig(f.e.cfg, f.proxy.Addr(), f.e.tokens[f.tokenUsers[i]])
	if err != nil {
		f.t.Fatal(err)
	}
	return kc
}

func (f *rotationFixture) certKC(i int) []byte {
	return certKubeconfig(f.t, f.e, f.admin, f.certUsers[i], f.proxy.Addr())
}

// rotate writes kc, waits until the cluster uses it and for rotationEvery.
func (f *rotationFixture) rotate(kc []byte) {
	f.t.Helper()
	f.put(kc)
	want := KubeconfigRevision(kc)
	deadline := time.Now().Add(10 * time.Second)
	for f.c.Revision() != want {
		if time.Now().After(deadline) {
			f.t.Fatalf("revision %q after 10s, want %q: not rotated in place", f.c.Revision(), want)
		}
		time.Sleep(10 * time.Millisecond)
	}
	time.Sleep(rotationEvery)
	f.conns = append(f.conns, f.proxy.Accepted())
}

// refused writes a Secret the policy refuses: it must be reported, without
// the token, and change nothing.
func (f *rotationFixture) refused(recorder *record.FakeRecorder) {
	f.t.Helper()
	before := f.c.Revision()
	f.put([]byte(strings.Replace(string(f.tokenKC(0)), "token: ",
		"exec: {command: /bin/true, apiVersion: client.authentication.k8s.io/v1}\n    token: ", 1)))
	select {
	case msg := <-recorder.Events:
		if !strings.Contains(msg, "KubeconfigRefused") || !strings.Contains(msg, "AllowExec") || strings.Contains(msg, f.e.tokens[f.tokenUsers[0]]) {
			f.t.Errorf("refusal event %q: want KubeconfigRefused naming AllowExec, without the token", msg)
		}
	case <-time.After(10 * time.Second):
		f.t.Fatal("no event for a refused Secret")
	}
	if f.c.Revision() != before {
		f.t.Fatalf("a refused Secret changed the revision")
	}
}

// revokeAllBut deletes the RBAC binding of every certificate identity but
// keep.
func (f *rotationFixture) revokeAllBut(keep string) {
	for _, name := range f.certUsers {
		if name == keep {
			continue
		}
		if err := f.admin.Delete(context.Background(), &rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: name}}); err != nil {
			f.t.Fatal(err)
		}
	}
}

// openAfter returns the requests of identities other than keep still open
// at the apiserver once within passed (none, if all ended before).
func (f *rotationFixture) openAfter(within time.Duration, keep string) []string {
	deadline := time.Now().Add(within)
	for {
		open := openRequests(f.e.audit(f.t), keep)
		if len(open) == 0 || time.Now().After(deadline) {
			return open
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// deltas are the differences between consecutive counts.
func deltas(counts []uint64) []uint64 {
	var out []uint64
	for i := 1; i < len(counts); i++ {
		out = append(out, counts[i]-counts[i-1])
	}
	return out
}

// certKubeconfig issues a client certificate of the apiserver's client CA
// for name, binds name to cluster-admin and returns its kubeconfig through
// server.
func certKubeconfig(t *testing.T, e *rotationEnv, admin client.Client, name, server string) []byte {
	t.Helper()
	user, err := e.env.AddUser(envtest.User{Name: name}, rest.CopyConfig(e.cfg))
	if err != nil {
		t.Fatal(err)
	}
	crb := &rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: name},
		RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "cluster-admin"},
		Subjects: []rbacv1.Subject{{APIGroup: rbacv1.GroupName, Kind: rbacv1.UserKind, Name: name}}}
	if err := admin.Create(context.Background(), crb); err != nil {
		t.Fatal(err)
	}
	kc, err := envtestutil.Kubeconfig(user.Config(), server, "")
	if err != nil {
		t.Fatal(err)
	}
	return kc
}

// adminHTTP returns an HTTP client of cfg whose connections are closed at
// the end of the test.
func adminHTTP(t *testing.T, cfg *rest.Config) *http.Client {
	t.Helper()
	hc, err := rest.HTTPClientFor(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { closeIdle(hc) })
	return hc
}

// adminClient returns a client of cfg whose connections are closed at the
// end of the test.
func adminClient(t *testing.T, cfg *rest.Config) client.Client {
	t.Helper()
	c, err := client.New(cfg, client.Options{HTTPClient: adminHTTP(t, cfg)})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// runAll starts runnables until the returned stop, which waits for them.
func runAll(t *testing.T, rs ...interface{ Start(context.Context) error }) func() {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	for _, r := range rs {
		wg.Go(func() {
			if err := r.Start(ctx); err != nil {
				t.Errorf("%T: %v", r, err)
			}
		})
	}
	return func() { cancel(); wg.Wait() }
}
