package kube

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/clusterpool/clusterpool/pool"
)

// rotationLoad is the workload of the rotation test.
type rotationLoad struct {
	stopc  chan struct{}
	once   sync.Once
	done   chan struct{}
	result loadResult
}

type loadResult struct {
	requests, failed, notConnected int64
	written, missing               int
	firstErr                       error
}

func startRotationLoad(t *testing.T, p *pool.Pool[client.ObjectKey, *Cluster], key client.ObjectKey, c *Cluster, admin client.Client) *rotationLoad {
	t.Helper()
	l := &rotationLoad{stopc: make(chan struct{}), done: make(chan struct{})}
	ctx := context.Background()
	var requests, failed, notConnected atomic.Int64
	var errOnce sync.Once
	fail := func(err error) {
		failed.Add(1)
		errOnce.Do(func() { l.result.firstErr = err })
	}
	go func() {
		defer close(l.done)
		for i := 0; ; i++ {
			select {
			case <-l.stopc:
				l.result.requests, l.result.failed, l.result.notConnected = requests.Load(), failed.Load(), notConnected.Load()
				l.result.written, l.result.missing = i/20, l.missing(ctx, c, i/20)
				return
			case <-time.After(20 * time.Millisecond):
			}
			if got, ok := p.Peek(key); !ok || got != c {
				notConnected.Add(1)
			}
			requests.Add(2)
			if err := c.Uncached.Get(ctx, client.ObjectKey{Name: "default"}, &corev1.Namespace{}); err != nil {
				fail(err)
			}
			if err := c.Client.List(ctx, &corev1.ConfigMapList{}, client.InNamespace("default")); err != nil {
				fail(err)
			}
			if i%20 == 0 {
				cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: fmt.Sprintf("rot-%d", i/20)}}
				if err := admin.Create(ctx, cm); err != nil {
					t.Errorf("writing a ConfigMap: %v", err)
				}
			}
		}
	}()
	return l
}

// missing counts the ConfigMaps rot-0 … rot-(n-1) the cache has not seen
// within 10 s.
func (l *rotationLoad) missing(ctx context.Context, c *Cluster, n int) int {
	deadline := time.Now().Add(10 * time.Second)
	for {
		var list corev1.ConfigMapList
		miss := n
		if err := c.Client.List(ctx, &list, client.InNamespace("default")); err == nil {
			for _, cm := range list.Items {
				if strings.HasPrefix(cm.Name, "rot-") {
					miss--
				}
			}
		}
		if miss <= 0 || time.Now().After(deadline) {
			return max(miss, 0)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// stop ends the load (once) and returns its result.
func (l *rotationLoad) stop() loadResult {
	l.once.Do(func() { close(l.stopc) })
	<-l.done
	return l.result
}
