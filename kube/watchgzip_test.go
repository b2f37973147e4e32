package kube

import (
	"context"
	"net/http"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	toolscache "k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/clusterpool/clusterpool/internal/watchgzip"
)

// TestWatchGzipOnRealWatch: the apiserver's compressed watch (WatchList)
// reaches the informer through watchGzip, events after the initial list
// included.
func TestWatchGzipOnRealWatch(t *testing.T) {
	needEnvtest(t)
	var mu sync.Mutex
	var encodings []string
	src := transportSource{ConfigSource: serversSource(), wrap: func(rt http.RoundTripper) http.RoundTripper {
		return roundTripFunc(func(req *http.Request) (*http.Response, error) {
			resp, err := rt.RoundTrip(req)
			if err == nil && watchgzip.IsWatch(req) {
				mu.Lock()
				encodings = append(encodings, resp.Header.Get("Content-Encoding"))
				mu.Unlock()
			}
			return resp, err
		})
	}}
	d := newTestDialer(t, src, DialerOptions{WatchTypes: []client.Object{&corev1.ConfigMap{}}})
	c := dialDirect(t, d, client.ObjectKey{Namespace: "work", Name: "gzip"})
	mu.Lock()
	if len(encodings) == 0 || encodings[0] != "gzip" {
		t.Fatalf("watch responses' Content-Encoding: %q, want gzip (the path under test)", encodings)
	}
	mu.Unlock()

	ctx := context.Background()
	inf, err := c.Cache.GetInformer(ctx, &corev1.ConfigMap{})
	if err != nil {
		t.Fatal(err)
	}
	const name = "watch-gzip"
	added := make(chan struct{}, 1)
	reg, err := inf.AddEventHandler(toolscache.ResourceEventHandlerFuncs{AddFunc: func(obj any) {
		if cm, ok := obj.(*corev1.ConfigMap); ok && cm.Name == name {
			added <- struct{}{}
		}
	}})
	if err != nil {
		t.Fatal(err)
	}
	defer inf.RemoveEventHandler(reg)
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: name}, Data: map[string]string{"k": "v"}}
	if err := c.Uncached.Create(ctx, cm); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := c.Uncached.Delete(context.Background(), cm); err != nil {
			t.Error(err)
		}
	})
	select {
	case <-added:
	case <-time.After(30 * time.Second):
		t.Fatal("the ConfigMap created after the sync never reached the informer")
	}
}

// idleCounter is a RoundTripper that counts CloseIdleConnections calls.
type idleCounter struct {
	http.RoundTripper
	closed int
}

func (c *idleCounter) CloseIdleConnections() { c.closed++ }

// closeIdle sees through watchGzip to the transport below: the request
// guard's tests and the rotation's closing of the old credentials'
// connections depend on it.
func TestWatchGzipPassesCloseIdle(t *testing.T) {
	below := &idleCounter{}
	closeIdle(&http.Client{Transport: &guardedTransport{next: &watchGzip{next: below}}})
	if below.closed != 1 {
		t.Fatalf("CloseIdleConnections reached the transport below %d times, want 1", below.closed)
	}
}
