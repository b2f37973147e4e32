package kube

import (
	"context"
	"errors"
	"fmt"
	"time"

	"sigs.k8s.io/controller-runtime/pkg/client"
)

// ErrReadTimeout is matched (errors.Is) by the error of a Get or List of
// Cluster.Client that did not end within DialerOptions.ReadTimeout, usually
// because the informer of its type has not synced. The error still matches
// what the read returned (for a cached read, apierrors.IsTimeout).
var ErrReadTimeout = errors.New("kube: read timed out")

// readTimeoutClient bounds each Get and List of a cluster's client, as
// ClusterCache's clientWithTimeout (cluster_accessor_client.go:313-341):
// controller-runtime's cache blocks a Get of a type whose informer has not
// synced until it has, or until ctx ends.
type readTimeoutClient struct {
	client.Client
	key     client.ObjectKey
	timeout time.Duration
}

// withReadTimeout returns c with each Get and List bounded by timeout.
func withReadTimeout(c client.Client, key client.ObjectKey, timeout time.Duration) client.Client {
	return &readTimeoutClient{Client: c, key: key, timeout: timeout}
}

// Get reads obj, within the timeout.
func (c *readTimeoutClient) Get(ctx context.Context, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
	return c.bounded(ctx, func(rctx context.Context) error { return c.Client.Get(rctx, key, obj, opts...) })
}

// List reads list, within the timeout.
func (c *readTimeoutClient) List(ctx context.Context, list client.ObjectList, opts ...client.ListOption) error {
	return c.bounded(ctx, func(rctx context.Context) error { return c.Client.List(rctx, list, opts...) })
}

// bounded runs read within the timeout, and marks its error as
// ErrReadTimeout when the read's own bound, not the caller's context,
// ended it.
func (c *readTimeoutClient) bounded(ctx context.Context, read func(context.Context) error) error {
	rctx, cancel := context.WithTimeout(ctx, c.timeout)
	defer cancel()
	err := read(rctx)
	if err == nil || ctx.Err() != nil || !errors.Is(rctx.Err(), context.DeadlineExceeded) {
		return err
	}
	return fmt.Errorf("%w (ReadTimeout %v, cluster %s): %w", ErrReadTimeout, c.timeout, c.key, err)
}
