package kube

import (
	"context"
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"
	toolscache "k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/clusterpool/clusterpool/breaker"
)

// SecretWatcher acts as soon as a cluster's kubeconfig Secret changes,
// instead of waiting for a probe to fail: a connected cluster whose Secret
// holds other credentials than its client was built from is removed and
// dialed again (pool.Probe); a cluster whose breaker is open is probed at
// once, since the new credentials may be what it lacked. It watches Secrets
// through a management-cluster informer cache (the manager's, usually). It
// is a manager.Runnable.
type SecretWatcher struct {
	Informers cache.Informers
	Pool      ClusterPool
	// Connect dials, in the background (pool.Probe), every cluster whose
	// kubeconfig Secret appears and that the pool does not hold yet, as
	// Cluster API's ClusterCache connects every Cluster: a controller whose
	// queue is busy with connected clusters then need not reach a cluster's
	// objects before its dial starts. Leave it off when not every Secret's
	// cluster is this replica's (kube/shard dials the clusters it gains).
	Connect bool
	// Admit, when set, limits the watcher to the clusters it admits: the
	// Secret of another cluster (another provider's, one a filter leaves
	// out, one whose Cluster is gone) dials nothing, even with Connect,
	// and re-dials nothing when it changes (Cluster API #12657).
	// Admission.Admitted fits. nil admits every cluster. It is called on
	// the informer's goroutine, for every kubeconfig Secret added or
	// changed: it must be quick and safe for concurrent use.
	Admit func(key client.ObjectKey) bool
}

// Start registers the handler and returns once ctx is done.
func (w *SecretWatcher) Start(ctx context.Context) error {
	inf, err := w.Informers.GetInformer(ctx, &corev1.Secret{})
	if err != nil {
		return fmt.Errorf("kube: Secret informer: %w", err)
	}
	reg, err := inf.AddEventHandler(toolscache.ResourceEventHandlerFuncs{
		AddFunc: func(obj any) { w.changed(obj) },
		UpdateFunc: func(old, obj any) {
			if o, ok := old.(*corev1.Secret); ok && !sameKubeconfig(o, obj) {
				w.changed(obj)
			}
		},
	})
	if err != nil {
		return fmt.Errorf("kube: Secret handler: %w", err)
	}
	<-ctx.Done()
	return inf.RemoveEventHandler(reg)
}

// changed handles a kubeconfig Secret that was added, or whose kubeconfig
// changed.
func (w *SecretWatcher) changed(obj any) {
	s, ok := obj.(*corev1.Secret)
	if !ok || !strings.HasSuffix(s.Name, "-kubeconfig") {
		return
	}
	key := client.ObjectKey{Namespace: s.Namespace, Name: strings.TrimSuffix(s.Name, "-kubeconfig")}
	if w.Admit != nil && !w.Admit(key) {
		return
	}
	c, ok := w.Pool.Peek(key)
	if !ok {
		st := w.Pool.State(key)
		if (st.Known && st.Breaker != breaker.StateClosed) || (w.Connect && !st.Known) {
			w.Pool.Probe(key)
		}
		return
	}
	if c.Revision == "" || c.Revision == KubeconfigRevision(s.Data[KubeconfigSecretKey]) {
		return
	}
	w.Pool.Remove(key)
	w.Pool.Probe(key)
}

// sameKubeconfig reports whether obj is a Secret holding old's kubeconfig
// (an informer's resync, or a change of other fields).
func sameKubeconfig(old *corev1.Secret, obj any) bool {
	s, ok := obj.(*corev1.Secret)
	return ok && string(s.Data[KubeconfigSecretKey]) == string(old.Data[KubeconfigSecretKey])
}
