package kube

import (
	"context"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/rest"
	toolscache "k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	"github.com/clusterpool/clusterpool/breaker"
	"github.com/clusterpool/clusterpool/internal/envtestutil"
	"github.com/clusterpool/clusterpool/pool"
)

// fakeInformers hands out one Secret informer, whose handler the test
// calls as an informer would.
type fakeInformers struct {
	cache.Informers
	inf *fakeInformer
}

func (f *fakeInformers) GetInformer(context.Context, client.Object, ...cache.InformerGetOption) (cache.Informer, error) {
	return f.inf, nil
}

type fakeInformer struct {
	cache.Informer
	h     toolscache.ResourceEventHandler
	added chan struct{} // closed once the handler is registered
}

func newFakeInformers() *fakeInformers {
	return &fakeInformers{inf: &fakeInformer{added: make(chan struct{})}}
}

func (f *fakeInformer) AddEventHandler(h toolscache.ResourceEventHandler) (toolscache.ResourceEventHandlerRegistration, error) {
	f.h = h
	close(f.added)
	return nil, nil
}

func (f *fakeInformer) RemoveEventHandler(toolscache.ResourceEventHandlerRegistration) error {
	return nil
}

func (f *fakeInformer) add(s *corev1.Secret) {
	<-f.added
	f.h.OnAdd(s, false)
}

func (f *fakeInformer) update(old, s *corev1.Secret) {
	<-f.added
	f.h.OnUpdate(old, s)
}

// runWatcher runs w until the end of the test.
func runWatcher(t *testing.T, w *SecretWatcher) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- w.Start(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Error(err)
		}
	})
}

// secretStore is a fake management cluster holding kubeconfig Secrets.
type secretStore struct {
	t  *testing.T
	cl client.Client
}

func newSecretStore(t *testing.T) *secretStore {
	return &secretStore{t: t, cl: fake.NewClientBuilder().Build()}
}

// put writes the kubeconfig Secret of key and returns it as stored.
func (st *secretStore) put(key client.ObjectKey, kc []byte) *corev1.Secret {
	st.t.Helper()
	ctx := context.Background()
	s := kubeconfigSecret(key, string(kc))
	var cur corev1.Secret
	if err := st.cl.Get(ctx, client.ObjectKeyFromObject(s), &cur); err == nil {
		cur.Data = s.Data
		if err := st.cl.Update(ctx, &cur); err != nil {
			st.t.Fatal(err)
		}
		return cur.DeepCopy()
	}
	if err := st.cl.Create(ctx, s); err != nil {
		st.t.Fatal(err)
	}
	return s.DeepCopy()
}

// tokenKubeconfig is a kubeconfig of srv with token.
func tokenKubeconfig(t *testing.T, srv *anyTokenServer, token string) []byte {
	t.Helper()
	kc, err := envtestutil.Kubeconfig(srv.config(""), "", token)
	if err != nil {
		t.Fatal(err)
	}
	return kc
}

// gatedSource holds its first Config call, after the read, until release
// is closed: a dial in flight that has read the Secret.
type gatedSource struct {
	ConfigSource
	once             sync.Once
	entered, release chan struct{}
}

func newGatedSource(src ConfigSource) *gatedSource {
	return &gatedSource{ConfigSource: src, entered: make(chan struct{}), release: make(chan struct{})}
}

func (g *gatedSource) Config(ctx context.Context, key client.ObjectKey) (*rest.Config, string, error) {
	cfg, rev, err := g.ConfigSource.Config(ctx, key)
	first := false
	g.once.Do(func() { first = true })
	if first {
		close(g.entered)
		select {
		case <-g.release:
		case <-ctx.Done():
		}
	}
	return cfg, rev, err
}

// Issue 33, item 3: a kubeconfig Secret that appears while a dial runs
// (which read the broken Secret before it), and that dial then fails with
// the breaker still closed: the watcher dials again once the dial has
// ended, and the cluster connects with the new Secret, with no further
// change of it.
func TestSecretChangedDuringFailedDialIsDialed(t *testing.T) {
	srv := newAnyTokenServer(t)
	key := client.ObjectKey{Namespace: "f", Name: "late"}
	st := newSecretStore(t)
	s0 := st.put(key, []byte("not a kubeconfig"))
	src := newGatedSource(SecretSource{Reader: st.cl})
	p := newPoolWith(t, src, DialerOptions{}, pool.Options[client.ObjectKey, *Cluster]{MaxWait: 10 * time.Second})
	ev := watchEvents(t, p)
	inf := newFakeInformers()
	w := &SecretWatcher{Informers: inf, Pool: p, Connect: true}
	runWatcher(t, w)

	inf.inf.add(s0) // Connect: the dial reads the broken Secret, and waits
	select {
	case <-src.entered:
	case <-time.After(10 * time.Second):
		t.Fatal("the watcher did not dial")
	}
	s1 := st.put(key, tokenKubeconfig(t, srv, "t1"))
	inf.inf.update(s0, s1)
	waitUntil(t, 10*time.Second, "the watcher to keep the Secret for the dial", func() bool { return w.recs.holds(key) })
	close(src.release) // the dial fails: it read the broken Secret
	ev.waitFor(t, 0, key, connected(true), 20*time.Second)
	if c, ok := p.Peek(key); !ok || c.Revision() != revisionOf(s1) {
		t.Fatalf("connected=%v, want the revision of the new Secret", ok)
	}
	if s := p.State(key); s.Breaker != breaker.StateClosed {
		t.Fatalf("breaker %v", s.Breaker)
	}
}

// Issue 33, item 2: credentials never roll back. A cluster that connected
// with token 2 stays on token 2 when the pool says it connected: neither a
// Secret kept for an earlier dial that failed (token 1, before token 2
// came) nor one kept for its own dial, which read a newer Secret (token 2)
// than the informer had delivered (token 1), is installed.
func TestCredentialsNeverRollBack(t *testing.T) {
	for _, tc := range []struct {
		name string
		// run drives the watcher until the cluster dials with the Secret
		// holding token 2, which run returns.
		run func(f *rollbackFixture) *corev1.Secret
	}{
		{"a kept Secret of a failed dial, then a newer one", func(f *rollbackFixture) *corev1.Secret {
			f.setState(pool.ClusterState{Known: true, Breaker: breaker.StateClosed, ConsecutiveFailures: 1})
			f.send(pool.DialFailed)
			f.sync()
			if f.w.recs.holds(f.key) {
				f.t.Fatal("the Secret kept for the dial is still kept after it failed")
			}
			s2 := f.st.put(f.key, tokenKubeconfig(f.t, f.srv, "t2"))
			f.inf.inf.update(f.s1, s2)
			f.sync()
			return s2
		}},
		{"the dial read a newer Secret than the informer delivered", func(f *rollbackFixture) *corev1.Secret {
			return f.st.put(f.key, tokenKubeconfig(f.t, f.srv, "t2"))
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newRollbackFixture(t)
			s2 := tc.run(f)
			c := f.dial()
			f.fp.connect(c)
			f.send(pool.Connected)
			f.sync()
			f.check(c, s2, "once connected")
			f.inf.inf.update(f.s1, s2) // a no-op if delivered before
			f.sync()
			f.check(c, s2, "after the newer Secret's event")
		})
	}
}

// rollbackFixture is a watcher on a fake pool whose cluster is dialing
// when its Secret changes from token 0 to token 1 (s1, kept by the
// watcher).
type rollbackFixture struct {
	t   *testing.T
	srv *anyTokenServer
	key client.ObjectKey
	st  *secretStore
	fp  *fakePool
	inf *fakeInformers
	w   *SecretWatcher
	s1  *corev1.Secret
}

func newRollbackFixture(t *testing.T) *rollbackFixture {
	f := &rollbackFixture{t: t, srv: newAnyTokenServer(t), key: client.ObjectKey{Namespace: "f", Name: "c"},
		st: newSecretStore(t), fp: newFakePool(), inf: newFakeInformers()}
	s0 := f.st.put(f.key, tokenKubeconfig(t, f.srv, "t0"))
	f.setState(pool.ClusterState{Known: true, Dialing: true})
	f.w = &SecretWatcher{Informers: f.inf, Pool: f.fp}
	runWatcher(t, f.w)
	f.s1 = f.st.put(f.key, tokenKubeconfig(t, f.srv, "t1"))
	f.inf.inf.update(s0, f.s1)
	f.sync()
	return f
}

func (f *rollbackFixture) setState(s pool.ClusterState) {
	f.fp.mu.Lock()
	f.fp.states[f.key] = s
	f.fp.mu.Unlock()
}

// send hands the watcher an event of the cluster.
func (f *rollbackFixture) send(typ pool.EventType) {
	f.fp.events <- pool.Event[client.ObjectKey]{Type: typ, Key: f.key}
}

// sync returns once the watcher has acted on everything before it: the
// fake pool's event channel is unbuffered, and the watcher takes the
// second event only after it has acted on the first (and on the Secrets
// queued before it).
func (f *rollbackFixture) sync() {
	other := client.ObjectKey{Namespace: "f", Name: "other"}
	for range 2 {
		f.fp.events <- pool.Event[client.ObjectKey]{Type: pool.BreakerHalfOpen, Key: other}
	}
}

// check fails the test unless c is at s2's revision and sends token 2.
func (f *rollbackFixture) check(c *Cluster, s2 *corev1.Secret, when string) {
	f.t.Helper()
	if c.Revision() != revisionOf(s2) {
		f.t.Fatalf("%s: the cluster went back from token 2 to an earlier revision", when)
	}
	resp, err := c.HTTPClient().Get(f.srv.srv.URL + "/api")
	if err != nil {
		f.t.Fatal(err)
	}
	resp.Body.Close()
	if len(f.srv.addrsWith("t1")) != 0 {
		f.t.Fatalf("%s: token 1 was sent after the cluster connected with token 2", when)
	}
}

// dial dials the cluster with the Secret the store holds now.
func (f *rollbackFixture) dial() *Cluster {
	f.t.Helper()
	d, err := NewDialer(SecretSource{Reader: f.st.cl}, DialerOptions{})
	if err != nil {
		f.t.Fatal(err)
	}
	c, err := d.Dial(context.Background(), f.key)
	if err != nil {
		f.t.Fatal(err)
	}
	f.t.Cleanup(c.Stop)
	if c.rot == nil {
		f.t.Fatal("the cluster cannot rotate in place: the test would not see a rollback")
	}
	return c
}
