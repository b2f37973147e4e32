package cachedread

import (
	"context"
	"strings"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// reader is an uncached client reading from a cache what
// controller-runtime's client with CacheOptions reads from it (see cached).
type reader struct {
	client.Client // the cluster's Uncached
	cache         client.Reader
	uncachedGVKs  map[schema.GroupVersionKind]struct{}
	unstructured  bool
}

// New returns uncached reading through cache but for the types of
// disableFor, and for unstructured objects unless unstructured: what
// client.New with client.CacheOptions{Reader: cache, DisableFor:
// disableFor, Unstructured: unstructured} returns, built on a client the
// caller already has.
func New(uncached client.Client, cache client.Reader, disableFor []client.Object, unstructured bool) (client.Client, error) {
	c := &reader{Client: uncached, cache: cache, uncachedGVKs: make(map[schema.GroupVersionKind]struct{}, len(disableFor)),
		unstructured: unstructured}
	for _, obj := range disableFor {
		gvk, err := uncached.GroupVersionKindFor(obj)
		if err != nil {
			return nil, err
		}
		c.uncachedGVKs[gvk] = struct{}{}
	}
	return c, nil
}

// cached reports whether obj is read from the cache, as controller-runtime's
// client decides it (shouldBypassCache): a list by its items' kind.
func (c *reader) cached(obj runtime.Object) (bool, error) {
	gvk, err := c.GroupVersionKindFor(obj)
	if err != nil {
		return false, err
	}
	if meta.IsListType(obj) {
		gvk.Kind = strings.TrimSuffix(gvk.Kind, "List")
	}
	if _, ok := c.uncachedGVKs[gvk]; ok {
		return false, nil
	}
	_, isUnstructured := obj.(runtime.Unstructured)
	return c.unstructured || !isUnstructured, nil
}

// Get reads obj from the cache, or from the cluster (see cached).
func (c *reader) Get(ctx context.Context, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
	ok, err := c.cached(obj)
	switch {
	case err != nil:
		return err
	case ok:
		return c.cache.Get(ctx, key, obj, opts...)
	}
	return c.Client.Get(ctx, key, obj, opts...)
}

// List reads list from the cache, or from the cluster (see cached).
func (c *reader) List(ctx context.Context, list client.ObjectList, opts ...client.ListOption) error {
	ok, err := c.cached(list)
	switch {
	case err != nil:
		return err
	case ok:
		return c.cache.List(ctx, list, opts...)
	}
	return c.Client.List(ctx, list, opts...)
}
