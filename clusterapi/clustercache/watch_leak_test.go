package clustercache_test

import (
	"bytes"
	"context"
	"fmt"
	"runtime/pprof"
	"strconv"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/util/workqueue"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	"sigs.k8s.io/controller-runtime/pkg/source"

	"github.com/clusterpool/clusterpool/clusterapi/clustercache"
	"github.com/clusterpool/clusterpool/internal/faultproxy"
)

// startingWatcher starts each source it is given as a running
// controller does (Controller.Watch: Start with the controller's context,
// which outlives every connection).
type startingWatcher struct {
	ctx context.Context
	q   workqueue.TypedRateLimitingInterface[reconcile.Request]
}

func (w *startingWatcher) Watch(src source.TypedSource[ctrl.Request]) error {
	return src.Start(w.ctx, w.q)
}

// TestWatchEndsWithItsConnection: a watch whose informer has not synced
// when its connection closes does not outlive the connection. A
// controller's source.Kind waits for the sync with the controller's
// context; on a stopped cache the sync never comes, so without the
// connection's bound its goroutine, and the closed connection's cache it
// holds, stayed until the manager stopped (the chaos run's "leaked").
func TestWatchEndsWithItsConnection(t *testing.T) {
	e := newEnv(t, "watchleak")
	proxy := e.proxy(t, faultproxy.Pass)
	cc := e.setup(t, 10, nil)
	e.start(t, cc)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	key := client.ObjectKey{Namespace: e.ns, Name: "stalled"}
	if err := e.createCluster(ctx, key.Name, e.kubeconfig(t, proxy.Addr()), true); err != nil {
		t.Fatal(err)
	}
	waitConnected(t, cc, key)

	// The Pod informer's list stalls: the watch waits for its sync.
	proxy.SetMode(faultproxy.Blackhole)
	q := workqueue.NewTypedRateLimitingQueue(workqueue.DefaultTypedControllerRateLimiter[reconcile.Request]())
	defer q.ShutDown()
	w := clustercache.NewWatcher(clustercache.WatcherOptions{Name: "pods", Watcher: &startingWatcher{ctx: ctx, q: q},
		Kind: &corev1.Pod{}, EventHandler: &handler.EnqueueRequestForObject{}})
	if err := cc.Watch(ctx, key, w); err != nil {
		t.Fatal(err)
	}
	// The source's goroutine waits for the sync, which cannot come. It and
	// the informer it starts carry the cluster's pprof label.
	if n := labelled(t, key); n == 0 {
		t.Fatal("no goroutine of the watch's source while its informer stalls")
	}

	// The connection closes (infrastructure no longer provisioned).
	if err := e.setProvisioned(ctx, key.Name, false); err != nil {
		t.Fatal(err)
	}
	eventually(t, time.Minute, func() error {
		if n := labelled(t, key); n > 0 {
			return fmt.Errorf("%d goroutines of the watch's source after its connection closed, want 0", n)
		}
		return nil
	})
}

// labelled counts the goroutines whose pprof label clusterpool.cluster is
// key.
func labelled(t *testing.T, key client.ObjectKey) int {
	t.Helper()
	var b bytes.Buffer
	if err := pprof.Lookup("goroutine").WriteTo(&b, 1); err != nil {
		t.Fatal(err)
	}
	want := fmt.Sprintf("# labels: {%q:%q}\n", "clusterpool.cluster", key.String())
	n, count := 0, 0
	for line := range strings.Lines(b.String()) {
		if c, _, ok := strings.Cut(line, " @ "); ok {
			count, _ = strconv.Atoi(c)
		} else if line == want {
			n += count
		}
	}
	return n
}
