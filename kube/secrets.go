package kube

import (
	"context"
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"
	toolscache "k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/clusterpool/clusterpool/pool"
)

// SecretWatcher re-dials a connected cluster as soon as its kubeconfig
// Secret holds other credentials than the client was built from, instead of
// waiting for a probe to fail. It watches Secrets through a
// management-cluster informer cache (the manager's, usually). It is a
// manager.Runnable.
type SecretWatcher struct {
	Informers cache.Informers
	Pool      *pool.Pool[client.ObjectKey, *Cluster]
}

// Start registers the handler and returns once ctx is done.
func (w *SecretWatcher) Start(ctx context.Context) error {
	inf, err := w.Informers.GetInformer(ctx, &corev1.Secret{})
	if err != nil {
		return fmt.Errorf("kube: Secret informer: %w", err)
	}
	reg, err := inf.AddEventHandler(toolscache.ResourceEventHandlerFuncs{
		AddFunc:    func(obj any) { w.changed(ctx, obj) },
		UpdateFunc: func(_, obj any) { w.changed(ctx, obj) },
	})
	if err != nil {
		return fmt.Errorf("kube: Secret handler: %w", err)
	}
	<-ctx.Done()
	return inf.RemoveEventHandler(reg)
}

func (w *SecretWatcher) changed(ctx context.Context, obj any) {
	s, ok := obj.(*corev1.Secret)
	if !ok || !strings.HasSuffix(s.Name, "-kubeconfig") {
		return
	}
	key := client.ObjectKey{Namespace: s.Namespace, Name: strings.TrimSuffix(s.Name, "-kubeconfig")}
	c, ok := w.Pool.Peek(key)
	if !ok || c.Revision == "" || c.Revision == KubeconfigRevision(s.Data[KubeconfigSecretKey]) {
		return
	}
	w.Pool.Remove(key)
	redial(ctx, w.Pool, key)
}
