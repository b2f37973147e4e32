package clustercache

import (
	"context"
	"fmt"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	toolscache "k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// connCache is the cache a Watcher's Watch gets: one connection's, whose
// waits end when the connection closes (conn is canceled). A controller's
// source.Kind waits, with the controller's context, for its informer's
// sync, then for every informer of the cache: on a closed connection's
// stopped cache that sync never comes, and the source's goroutine (and the
// whole cache it holds) would stay until the manager stops. Cluster API's
// ClusterCache passes its cache as is; the drop-in, which may hand out a
// connection before its informers synced (see kube.DialerOptions'
// InitialSyncTimeout), bounds the waits instead.
type connCache struct {
	cache.Cache
	conn context.Context
}

// GetInformer is the cache's, its wait for the sync bounded by the
// connection; once the connection closed it returns an informer that
// refuses handlers (goneInformer), never an error, since a source.Kind
// retries errors every 10 s for as long as its controller runs.
func (c connCache) GetInformer(ctx context.Context, obj client.Object, opts ...cache.InformerGetOption) (cache.Informer, error) {
	ctx, stop := c.bound(ctx)
	defer stop()
	return c.informer(c.Cache.GetInformer(ctx, obj, opts...))
}

// GetInformerForKind is GetInformer by kind.
func (c connCache) GetInformerForKind(ctx context.Context, gvk schema.GroupVersionKind, opts ...cache.InformerGetOption) (cache.Informer, error) {
	ctx, stop := c.bound(ctx)
	defer stop()
	return c.informer(c.Cache.GetInformerForKind(ctx, gvk, opts...))
}

// WaitForCacheSync is the cache's, bounded by the connection: false once
// it closed.
func (c connCache) WaitForCacheSync(ctx context.Context) bool {
	ctx, stop := c.bound(ctx)
	defer stop()
	return c.Cache.WaitForCacheSync(ctx)
}

// bound returns ctx, also canceled when the connection closes, and its
// release.
func (c connCache) bound(ctx context.Context) (context.Context, func()) {
	ctx, cancel := context.WithCancel(ctx)
	stop := context.AfterFunc(c.conn, cancel)
	return ctx, func() {
		stop()
		cancel()
	}
}

// informer returns inf and err as they are while the connection is open,
// else a goneInformer (on an informer that never runs if inf is nil).
func (c connCache) informer(inf cache.Informer, err error) (cache.Informer, error) {
	if c.conn.Err() == nil {
		return inf, err
	}
	if inf == nil {
		inf = toolscache.NewSharedIndexInformer(nil, &unstructured.Unstructured{}, 0, toolscache.Indexers{})
	}
	return goneInformer{Informer: inf}, nil
}

// errConnectionClosed is goneInformer's refusal.
var errConnectionClosed = fmt.Errorf("%w: the connection of this watch closed", ErrClusterNotConnected)

// goneInformer is the informer of a closed connection: it refuses new
// handlers, so that a source.Kind starting on it returns at once, and
// reports itself stopped and not synced. Its other methods are Informer's.
type goneInformer struct{ cache.Informer }

// AddEventHandler refuses h: the connection closed.
func (goneInformer) AddEventHandler(toolscache.ResourceEventHandler) (toolscache.ResourceEventHandlerRegistration, error) {
	return nil, errConnectionClosed
}

// AddEventHandlerWithResyncPeriod refuses h: the connection closed.
func (g goneInformer) AddEventHandlerWithResyncPeriod(h toolscache.ResourceEventHandler, _ time.Duration) (toolscache.ResourceEventHandlerRegistration, error) {
	return g.AddEventHandler(h)
}

// AddEventHandlerWithOptions refuses h: the connection closed.
func (g goneInformer) AddEventHandlerWithOptions(h toolscache.ResourceEventHandler, _ toolscache.HandlerOptions) (toolscache.ResourceEventHandlerRegistration, error) {
	return g.AddEventHandler(h)
}

// RemoveEventHandler has nothing to remove.
func (goneInformer) RemoveEventHandler(toolscache.ResourceEventHandlerRegistration) error { return nil }

// AddIndexers refuses: the connection closed.
func (goneInformer) AddIndexers(toolscache.Indexers) error { return errConnectionClosed }

// HasSynced is false: the informer stopped.
func (goneInformer) HasSynced() bool { return false }

// IsStopped is true.
func (goneInformer) IsStopped() bool { return true }
