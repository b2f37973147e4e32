package clustercache

import (
	"context"
	"errors"

	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// guardedClient is a workload cluster's client whose errors that say the
// cluster is not reachable (the request guard's, see guardErrors) also
// match ErrClusterNotConnected, as Cluster API's controllers expect: the
// Machine controller reports ConnectionDown rather than InternalError.
// Every other error is returned as it is.
type guardedClient struct {
	client.Client
	key client.ObjectKey
}

// guard wraps c; key names its cluster in errors.
func guard(c client.Client, key client.ObjectKey) client.Client {
	return &guardedClient{Client: c, key: key}
}

func (c *guardedClient) err(err error) error { return requestError(c.key, err) }

// Get reads obj.
func (c *guardedClient) Get(ctx context.Context, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
	return c.err(c.Client.Get(ctx, key, obj, opts...))
}

// List reads list.
func (c *guardedClient) List(ctx context.Context, list client.ObjectList, opts ...client.ListOption) error {
	return c.err(c.Client.List(ctx, list, opts...))
}

// Apply applies obj.
func (c *guardedClient) Apply(ctx context.Context, obj runtime.ApplyConfiguration, opts ...client.ApplyOption) error {
	return c.err(c.Client.Apply(ctx, obj, opts...))
}

// Create creates obj.
func (c *guardedClient) Create(ctx context.Context, obj client.Object, opts ...client.CreateOption) error {
	return c.err(c.Client.Create(ctx, obj, opts...))
}

// Delete deletes obj.
func (c *guardedClient) Delete(ctx context.Context, obj client.Object, opts ...client.DeleteOption) error {
	return c.err(c.Client.Delete(ctx, obj, opts...))
}

// Update updates obj.
func (c *guardedClient) Update(ctx context.Context, obj client.Object, opts ...client.UpdateOption) error {
	return c.err(c.Client.Update(ctx, obj, opts...))
}

// Patch patches obj.
func (c *guardedClient) Patch(ctx context.Context, obj client.Object, patch client.Patch, opts ...client.PatchOption) error {
	return c.err(c.Client.Patch(ctx, obj, patch, opts...))
}

// DeleteAllOf deletes the objects of obj's type that opts select.
func (c *guardedClient) DeleteAllOf(ctx context.Context, obj client.Object, opts ...client.DeleteAllOfOption) error {
	return c.err(c.Client.DeleteAllOf(ctx, obj, opts...))
}

// Status returns the status subresource's client, guarded likewise.
func (c *guardedClient) Status() client.SubResourceWriter {
	return &guardedSubResource{w: c.Client.Status(), key: c.key}
}

// SubResource returns the named subresource's client, guarded likewise.
func (c *guardedClient) SubResource(subResource string) client.SubResourceClient {
	sc := c.Client.SubResource(subResource)
	return &guardedSubResource{r: sc, w: sc, key: c.key}
}

// guardedSubResource is a subresource client with guardedClient's errors.
type guardedSubResource struct {
	r   client.SubResourceReader // nil for Status, which only writes
	w   client.SubResourceWriter
	key client.ObjectKey
}

func (c *guardedSubResource) err(err error) error { return requestError(c.key, err) }

// Get reads obj's subresource into subResource.
func (c *guardedSubResource) Get(ctx context.Context, obj, subResource client.Object, opts ...client.SubResourceGetOption) error {
	if c.r == nil {
		return errors.New("clustercache: the status client does not read")
	}
	return c.err(c.r.Get(ctx, obj, subResource, opts...))
}

// Create creates subResource of obj.
func (c *guardedSubResource) Create(ctx context.Context, obj, subResource client.Object, opts ...client.SubResourceCreateOption) error {
	return c.err(c.w.Create(ctx, obj, subResource, opts...))
}

// Update updates obj's subresource.
func (c *guardedSubResource) Update(ctx context.Context, obj client.Object, opts ...client.SubResourceUpdateOption) error {
	return c.err(c.w.Update(ctx, obj, opts...))
}

// Patch patches obj's subresource.
func (c *guardedSubResource) Patch(ctx context.Context, obj client.Object, patch client.Patch, opts ...client.SubResourcePatchOption) error {
	return c.err(c.w.Patch(ctx, obj, patch, opts...))
}

// Apply applies obj's subresource.
func (c *guardedSubResource) Apply(ctx context.Context, obj runtime.ApplyConfiguration, opts ...client.SubResourceApplyOption) error {
	return c.err(c.w.Apply(ctx, obj, opts...))
}
