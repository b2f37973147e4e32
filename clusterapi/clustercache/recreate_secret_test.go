package clustercache_test

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/clusterpool/clusterpool/clusterapi/clustercache"
	"github.com/clusterpool/clusterpool/internal/faultproxy"
	"github.com/clusterpool/clusterpool/kube"
)

// The chaos hour's crossed reads (fault 17 of bench/peers/results/chaos.md):
// a Cluster deleted with its kubeconfig Secret, then created again with a
// new Secret naming another server, while SecretClient (Cluster API's
// Secret caching client) still serves the deleted Secret, its watch
// broken. The new Cluster connects to the new server, its Secret read
// from the apiserver; no client of the old server is handed out for it,
// and the old server is not dialed again.
func TestRecreatedClusterIsNotDialedWithAStaleSecret(t *testing.T) {
	e := newEnv(t, "recreate-secret")
	secrets := &staleSecrets{held: map[client.ObjectKey]*corev1.Secret{}}
	cc := e.setup(t, 1, func(o *clustercache.Options) {
		secrets.Reader = o.SecretClient
		o.SecretClient = secrets
	})
	oldSrv, newSrv := e.proxy(t, faultproxy.Pass), e.proxy(t, faultproxy.Pass) // closed after the manager stops
	e.start(t, cc)
	ctx := context.Background()
	key := client.ObjectKey{Namespace: e.ns, Name: "a"}
	if err := e.createCluster(ctx, key.Name, e.kubeconfig(t, oldSrv.Addr()), true); err != nil {
		t.Fatal(err)
	}
	waitConnected(t, cc, key)
	secrets.freeze()

	old := &clusterv1.Cluster{}
	if err := e.c.Get(ctx, key, old); err != nil {
		t.Fatal(err)
	}
	if err := e.c.Delete(ctx, old); err != nil {
		t.Fatal(err)
	}
	secret := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: key.Namespace, Name: kube.KubeconfigSecretName(key.Name)}}
	if err := e.c.Delete(ctx, secret); err != nil {
		t.Fatal(err)
	}
	eventually(t, 30*time.Second, func() error { // the admission removed the deleted Cluster, its client stopped
		if _, err := cc.GetClient(ctx, key); err == nil || oldSrv.Open() != 0 {
			return fmt.Errorf("%w: %d connections open to the old server", errNotYet, oldSrv.Open())
		}
		return nil
	})
	dialed := oldSrv.Accepted()
	if err := e.createCluster(ctx, key.Name, e.kubeconfig(t, newSrv.Addr()), true); err != nil {
		t.Fatal(err)
	}
	eventually(t, 30*time.Second, func() error {
		c, err := cc.GetClient(ctx, key)
		if err != nil {
			return fmt.Errorf("%w: %v", errNotYet, err)
		}
		cfg, err := cc.GetRESTConfig(ctx, key)
		if err != nil {
			return fmt.Errorf("%w: %v", errNotYet, err)
		}
		if !strings.Contains(cfg.Host, newSrv.Addr()) {
			t.Fatalf("the re-created Cluster's client reaches %s, want the new server %s (the old one is %s)",
				cfg.Host, newSrv.Addr(), oldSrv.Addr())
		}
		return c.List(ctx, &corev1.NodeList{})
	})
	if n := oldSrv.Accepted() - dialed; n != 0 {
		t.Fatalf("the old server accepted %d connections after its Cluster was deleted", n)
	}
}

// staleSecrets is a SecretClient whose cache stops when frozen: from then
// on it serves the Secrets it had read, deleted ones too, as a Secret
// cache whose watch broke does until its reflector lists again.
type staleSecrets struct {
	client.Reader
	mu     sync.Mutex
	frozen bool
	held   map[client.ObjectKey]*corev1.Secret
}

func (s *staleSecrets) freeze() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.frozen = true
}

// Get serves a held Secret once frozen; else it reads, and holds a Secret.
func (s *staleSecrets) Get(ctx context.Context, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
	sec, isSecret := obj.(*corev1.Secret)
	s.mu.Lock()
	held, frozen := s.held[key], s.frozen
	s.mu.Unlock()
	if isSecret && frozen && held != nil {
		held.DeepCopyInto(sec)
		return nil
	}
	if err := s.Reader.Get(ctx, key, obj, opts...); err != nil {
		return err
	}
	if isSecret && !frozen {
		s.mu.Lock()
		s.held[key] = sec.DeepCopy()
		s.mu.Unlock()
	}
	return nil
}
