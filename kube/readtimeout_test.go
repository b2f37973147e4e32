package kube

import (
	"context"
	"errors"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/clusterpool/clusterpool/internal/faultproxy"
	"github.com/clusterpool/clusterpool/pool"
)

// A cached Get or List of a type whose informer cannot sync (the cluster
// stopped answering before its first read) fails within ReadTimeout, as
// ClusterCache's client does, instead of blocking its worker until the
// caller's context ends.
func TestReadTimeoutBoundsCachedReads(t *testing.T) {
	needEnvtest(t)
	proxy := workProxy(t)
	key := client.ObjectKey{Namespace: "fleet", Name: "read-timeout"}
	putKubeconfig(t, key, kubeconfig(t, proxy.Addr(), ""))
	const bound = 300 * time.Millisecond
	p, _ := newTestPool(t, DialerOptions{ReadTimeout: bound}, pool.Options[client.ObjectKey, *Cluster]{MaxWait: 10 * time.Second})
	c := getEventually(t, p, key)
	ctx := context.Background()
	// The REST mapper learns the core group now, so that the reads below
	// wait for their informers only.
	if err := c.Uncached.Get(ctx, client.ObjectKey{Namespace: "default", Name: "none"}, &corev1.Secret{}); !apierrors.IsNotFound(err) {
		t.Fatalf("uncached Get: %v", err)
	}
	proxy.SetMode(faultproxy.Hold)
	for name, read := range map[string]func() error{
		"Get": func() error {
			return c.Client.Get(ctx, client.ObjectKey{Namespace: "default", Name: "none"}, &corev1.Secret{})
		},
		"List": func() error { return c.Client.List(ctx, &corev1.ServiceAccountList{}) },
	} {
		done := make(chan error, 1)
		go func() { done <- read() }()
		select {
		case err := <-done:
			if !errors.Is(err, ErrReadTimeout) || !apierrors.IsTimeout(err) {
				t.Errorf("cached %s of a type that cannot sync: %v, want ErrReadTimeout and a timeout status", name, err)
			}
		case <-time.After(30 * time.Second): // far above the bound: only a missing bound reaches it
			t.Fatalf("cached %s of a type that cannot sync still blocks after 30s; ReadTimeout %v", name, bound)
		}
	}
	// The caller's own deadline is not the read's timeout.
	cctx, cancel := context.WithTimeout(ctx, bound/3)
	defer cancel()
	if err := c.Client.Get(cctx, client.ObjectKey{Namespace: "default", Name: "none"}, &corev1.ConfigMap{}); err == nil || errors.Is(err, ErrReadTimeout) {
		t.Errorf("cached Get past the caller's deadline: %v, want an error not matching ErrReadTimeout", err)
	}
}
