package kube

import (
	"context"
	"fmt"
	"strings"
	"sync"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	toolscache "k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/record"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/clusterpool/clusterpool/breaker"
	"github.com/clusterpool/clusterpool/pool"
)

// SecretWatcher acts as soon as a cluster's kubeconfig Secret changes,
// instead of waiting for a probe to fail. It watches Secrets through a
// management-cluster informer cache (the manager's, usually). It is a
// manager.Runnable.
//
// When the kubeconfig of a connected cluster changes (its digest differs
// from Cluster.Revision), the watcher parses it as the Dialer's
// ConfigSource does, so with the same KubeconfigPolicy: a SecretSource
// parses the Secret of the event itself (its Reader's cache may not have
// caught up yet); another ConfigSource is asked for the config again,
// bounded by DefaultRequestTimeout, on the informer's goroutine. Then:
//
//   - only the credentials changed (bearer token, client certificate and
//     key; same server, CA, TLS server name, and every other field): the
//     cluster switches to them in place (see rotatable and rotator). Its
//     next requests use them, its informers go on without a relist (their
//     watches re-establish from their resourceVersion on new connections),
//     it stays connected (no Remove, no Disconnected event), and the
//     connections opened with the old credentials are closed once their
//     requests in flight have ended (after RequestTimeout at the latest);
//   - anything else changed, or the cluster's config cannot rotate in place
//     (exec or auth-provider plugins, file references, a proxy, a
//     ConfigSource's own transport): it is removed and dialed again
//     (pool.Remove, then pool.Probe), as before;
//   - the ConfigSource refuses the new content (KubeconfigPolicy, a
//     kubeconfig that does not parse, a missing key, a certificate and key
//     that are no pair): the cluster keeps its current credentials, and
//     the refusal is reported as the Secret's error: a log line on Logger
//     and, with Recorder, a Warning event "KubeconfigRefused" on the
//     Secret, both with the error (matching ErrCredentialsRefused), which
//     names the Secret and the field and never a value. Fixing the Secret
//     is picked up by the next change.
//
// A cluster whose breaker is open is probed at once, since the new
// credentials may be what it lacked. A cluster that is dialing when its
// Secret changes may connect with the credentials it read before: the
// watcher keeps the Secret and checks it again when the pool says the
// cluster connected (its Connected event), as if it had changed then.
type SecretWatcher struct {
	Informers cache.Informers
	Pool      ClusterPool
	// Connect dials, in the background (pool.Probe), every cluster whose
	// kubeconfig Secret appears or changes and that the pool holds no
	// client for and is not dialing (also one whose last dial failed: the
	// new Secret may be what it lacked), as
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
	// Logger receives rotations (V(1)) and refused Secrets, by cluster
	// key, never with credentials. The zero value discards them.
	Logger logr.Logger
	// Recorder, when set, records a Warning event "KubeconfigRefused" on a
	// kubeconfig Secret whose new content was refused (the manager's
	// GetEventRecorderFor fits).
	Recorder record.EventRecorder

	mu sync.Mutex
	// dialing holds the latest changed Secret of each cluster that was
	// dialing when it changed, until the cluster connects (checked then)
	// or is removed.
	dialing map[client.ObjectKey]*corev1.Secret
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
	events := w.Pool.Subscribe(ctx)
	for {
		select {
		case ev, ok := <-events:
			if !ok { // the pool closed: nothing connects any more
				events = nil
				continue
			}
			w.event(ev)
		case <-ctx.Done():
			return inf.RemoveEventHandler(reg)
		}
	}
}

// event checks again, once a cluster connected, a Secret that changed
// while it was dialing, and forgets it when the cluster is removed.
func (w *SecretWatcher) event(ev pool.Event[client.ObjectKey]) {
	switch ev.Type {
	case pool.Connected:
		w.recheck(ev.Key)
	case pool.Removed:
		w.take(ev.Key)
	}
}

// keep holds s, the changed Secret of cluster key that is dialing, for
// when it connects; if it connected meanwhile, s is checked now.
func (w *SecretWatcher) keep(key client.ObjectKey, s *corev1.Secret) {
	w.mu.Lock()
	if w.dialing == nil {
		w.dialing = map[client.ObjectKey]*corev1.Secret{}
	}
	w.dialing[key] = s
	w.mu.Unlock()
	if _, ok := w.Pool.Peek(key); ok { // its Connected event may have come before
		w.recheck(key)
	}
}

// recheck looks again at the Secret kept for key, if any, as changed.
func (w *SecretWatcher) recheck(key client.ObjectKey) {
	if s := w.take(key); s != nil {
		w.changed(s)
	}
}

// take returns and forgets the Secret kept for key, or nil.
func (w *SecretWatcher) take(key client.ObjectKey) *corev1.Secret {
	w.mu.Lock()
	defer w.mu.Unlock()
	s := w.dialing[key]
	delete(w.dialing, key)
	return s
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
		if (st.Known && st.Breaker != breaker.StateClosed) || (w.Connect && !st.Dialing) {
			w.Pool.Probe(key)
		}
		if st.Dialing { // a dial or probe may connect with what it read before this change
			w.keep(key, s)
		}
		return
	}
	if rev := c.Revision(); rev != "" && rev != KubeconfigRevision(s.Data[KubeconfigSecretKey]) {
		w.rotate(s, key, c)
	}
}

// rotate acts on a changed kubeconfig Secret s of the connected cluster c:
// in place, re-dial or refusal (see SecretWatcher).
func (w *SecretWatcher) rotate(s *corev1.Secret, key client.ObjectKey, c *Cluster) {
	ctx, cancel := context.WithTimeout(context.Background(), DefaultRequestTimeout)
	defer cancel()
	switch out, err := c.refreshCredentials(ctx, s); out {
	case rotationInPlace:
		w.Logger.V(1).Info("credentials rotated in place", "cluster", key.String(), "revision", c.Revision())
	case rotationRefused:
		w.Logger.Error(err, "kubeconfig Secret changed but is refused; the cluster keeps its current credentials",
			"cluster", key.String())
		if w.Recorder != nil {
			w.Recorder.Event(s, corev1.EventTypeWarning, "KubeconfigRefused", err.Error())
		}
	case rotationRedial:
		w.Pool.Remove(key)
		w.Pool.Probe(key)
	}
}

// sameKubeconfig reports whether obj is a Secret holding old's kubeconfig
// (an informer's resync, or a change of other fields).
func sameKubeconfig(old *corev1.Secret, obj any) bool {
	s, ok := obj.(*corev1.Secret)
	return ok && string(s.Data[KubeconfigSecretKey]) == string(old.Data[KubeconfigSecretKey])
}
