package fleet

import (
	"context"
	"syscall"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// A workload apiserver of a real fleet stops answering while stopped,
// answers again when continued, refuses while killed, and starts again
// on the same port with its data (etcd's).
func TestAPIServerProcStopsAndRestarts(t *testing.T) {
	ctx := t.Context()
	root, err := RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	f, err := Start(ctx, root, 0, 1, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Stop()
	p, err := FindAPIServer(f.Workload[0])
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	cfg := rest.CopyConfig(f.Workload[0])
	cfg.Timeout = 2 * time.Second
	c, err := client.New(cfg, client.Options{})
	if err != nil {
		t.Fatal(err)
	}
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "kept"}}
	if err := c.Create(ctx, cm); err != nil {
		t.Fatal(err)
	}
	get := func() error { return c.Get(ctx, client.ObjectKeyFromObject(cm), &corev1.ConfigMap{}) }
	if err := p.Signal(syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	if err := get(); err == nil {
		t.Fatal("a stopped apiserver answered")
	}
	if err := p.Signal(syscall.SIGCONT); err != nil {
		t.Fatal(err)
	}
	if err := eventually(get); err != nil {
		t.Fatalf("after SIGCONT: %v", err)
	}
	if err := p.Kill(); err != nil {
		t.Fatal(err)
	}
	if err := get(); err == nil {
		t.Fatal("a killed apiserver answered")
	}
	if err := p.Start(ctx); err != nil {
		t.Fatal(err)
	}
	if err := eventually(get); err != nil {
		t.Fatalf("after the restart, the ConfigMap: %v", err)
	}
}

// eventually retries fn for 30 s (a connection of the client may be
// broken by the fault it recovers from).
func eventually(fn func() error) error {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for {
		err := fn()
		if err == nil || ctx.Err() != nil {
			return err
		}
		time.Sleep(100 * time.Millisecond)
	}
}
