package kube

import (
	"context"
	"fmt"
	"strings"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	toolscache "k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/record"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/clusterpool/clusterpool/pool"
)

// SecretWatcher acts as soon as a cluster's kubeconfig Secret changes,
// instead of waiting for a probe to fail. It is a manager.Runnable that
// watches Secrets through a management-cluster informer cache (the
// manager's, usually). Its handler only records the changed Secret (the
// latest of each cluster) and queues the cluster; a worker of the
// Reconciler that runs it acts on it, one worker per cluster at a time.
//
// A connected cluster's changed kubeconfig is read as the Dialer's
// ConfigSource reads it, so under the same KubeconfigPolicy (a SecretSource
// parses the event's Secret; another source is asked again, bounded by
// DefaultRequestTimeout), and a cluster never goes back to older
// credentials. Then: only the credentials changed, the cluster switches to
// them in place (no Redial, no Disconnected event, no relist); anything
// else changed, or the config cannot rotate in place, Pool.Redial; the new
// content is refused, the cluster keeps its credentials and the error
// (matching ErrCredentialsRefused, naming the Secret and the field, never a
// value) goes to Logger and, with Recorder, to a Warning event
// "KubeconfigRefused" on the Secret.
//
// A cluster not connected is probed at once (Probe: an open breaker may
// lack just these credentials) and, with Connect, dialed. A cluster dialing
// when its Secret changes keeps the Secret (a newer one replaces it) until
// the dial ends (Connected, DialFailed or BreakerOpened): connected, it is
// checked as above; failed, the watcher asks for a new dial (Connect, or
// Probe if the breaker opened), which reads it. docs/security.md
// ("Credential rotation") has every case.
type SecretWatcher struct {
	// Informers is the management cluster's informer cache (the manager's).
	Informers cache.Informers
	// Pool is the pool of the Dialer whose ConfigSource reads the Secrets.
	Pool ClusterPool
	// Connect dials, in the background (Pool.Connect), every cluster whose
	// kubeconfig Secret appears or changes and that the pool holds no
	// client for, is not dialing and whose breaker is closed (also one
	// whose last dial failed: the new Secret may be what it lacked), as
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
	// the Reconciler's workers, for every kubeconfig Secret added or changed: it
	// must be quick and safe for concurrent use.
	Admit func(key client.ObjectKey) bool
	// Logger receives rotations (V(1)) and refused Secrets, by cluster
	// key, never with credentials. The zero value discards them.
	Logger logr.Logger
	// Recorder, when set, records a Warning event "KubeconfigRefused" on a
	// kubeconfig Secret whose new content was refused (the manager's
	// GetEventRecorderFor fits).
	Recorder record.EventRecorder

	// recs holds, per cluster, the changed Secret not acted on yet and the
	// one kept while a dial runs (see clusterRecord); a Reconciler keeps its
	// probe ticks there too.
	recs records
}

// change is a changed kubeconfig Secret and the revisions
// (KubeconfigRevision) the cluster's kubeconfig had before it, as far as
// the watcher saw: the Secret is newer than the credentials of a cluster
// that uses one of them.
type change struct {
	s      *corev1.Secret
	before []string
}

// maxBefore bounds change.before: a Secret that changes many times during
// one dial keeps only its latest revisions.
const maxBefore = 16

// after returns the revisions before a Secret that replaces c's: c's own
// and those before it, then before.
func (c change) after(before []string) []string {
	out := append(append(append([]string(nil), c.before...), revisionOf(c.s)), before...)
	return out[max(0, len(out)-maxBefore):]
}

// revisionOf is the revision of s's kubeconfig.
func revisionOf(s *corev1.Secret) string { return KubeconfigRevision(s.Data[KubeconfigSecretKey]) }

// Start registers the handler, acts on the changed Secrets and the pool's
// events, and returns once ctx is done. It is a Reconciler with no Prober.
func (w *SecretWatcher) Start(ctx context.Context) error {
	return (&Reconciler{Secrets: w}).Start(ctx)
}

// register adds the handler that records each changed kubeconfig Secret
// and hands its cluster to enqueue; the returned func removes it.
func (w *SecretWatcher) register(ctx context.Context, enqueue func(client.ObjectKey)) (func() error, error) {
	inf, err := w.Informers.GetInformer(ctx, &corev1.Secret{})
	if err != nil {
		return nil, fmt.Errorf("kube: Secret informer: %w", err)
	}
	reg, err := inf.AddEventHandler(toolscache.ResourceEventHandlerFuncs{
		AddFunc: func(obj any) { w.enqueue(nil, obj, enqueue) },
		UpdateFunc: func(old, obj any) {
			if o, ok := old.(*corev1.Secret); ok && !sameKubeconfig(o, obj) {
				w.enqueue(o, obj, enqueue)
			}
		},
	})
	if err != nil {
		return nil, fmt.Errorf("kube: Secret handler: %w", err)
	}
	return func() error { return inf.RemoveEventHandler(reg) }, nil
}

// enqueue records obj, a kubeconfig Secret added (old nil) or whose
// kubeconfig changed from old's, and hands its cluster to queue.
func (w *SecretWatcher) enqueue(old *corev1.Secret, obj any, queue func(client.ObjectKey)) {
	s, key, ok := kubeconfigSecretOf(obj)
	if !ok {
		return
	}
	ch := change{s: s}
	if old != nil {
		ch.before = []string{revisionOf(old)}
	}
	w.recs.changed(key, ch)
	queue(key)
}

// reconcile acts on key's pending Secret, if any: one changed since, as
// act does; one kept for a dial that has ended, as dialEnded does.
func (w *SecretWatcher) reconcile(key client.ObjectKey) {
	ch, ended, ok := w.recs.takePending(key)
	switch {
	case !ok:
	case ended:
		w.dialEnded(key, ch)
	default:
		w.act(ch)
	}
}

// kubeconfigSecretOf returns obj as a kubeconfig Secret and its cluster's
// key, if it is one.
func kubeconfigSecretOf(obj any) (*corev1.Secret, client.ObjectKey, bool) {
	s, ok := obj.(*corev1.Secret)
	if !ok || !strings.HasSuffix(s.Name, "-kubeconfig") {
		return nil, client.ObjectKey{}, false
	}
	return s, client.ObjectKey{Namespace: s.Namespace, Name: strings.TrimSuffix(s.Name, "-kubeconfig")}, true
}

// noted records the end of a dial during which a Secret changed, and
// forgets that Secret when the cluster is removed; it reports whether key
// has a Secret to act on now. Every end of a dial is an event (Connected,
// DialFailed, BreakerOpened: see pool.DialFailed), and the latest event of
// a cluster is never lost: an event that starts a dial (BreakerHalfOpen,
// Redialed) keeps the Secret for that dial's end. A dial that starts after
// the event sends none: the decision on the Secret then finds it dialing
// and keeps the Secret again.
func (w *SecretWatcher) noted(ev pool.Event[client.ObjectKey]) bool {
	switch ev.Type {
	case pool.Removed:
		w.recs.take(ev.Key)
	case pool.Connected, pool.DialFailed, pool.BreakerOpened:
		return w.recs.dialEnded(ev.Key)
	}
	return false
}

// dialEnded acts on ch, the Secret that changed while key's dial ran, now
// that the dial has ended: connected, as on any change; failed (perhaps
// for the credentials it read before ch), with a new dial, or the open
// breaker's probe, which reads ch's.
func (w *SecretWatcher) dialEnded(key client.ObjectKey, ch change) {
	w.decideSecret(key, ch, true)
}

// act handles a kubeconfig Secret that was added, or whose kubeconfig
// changed. It replaces the Secret kept for a dial of its cluster.
func (w *SecretWatcher) act(ch change) {
	_, key, _ := kubeconfigSecretOf(ch.s)
	if w.Admit != nil && !w.Admit(key) {
		return
	}
	if prev, ok := w.recs.take(key); ok {
		ch.before = prev.after(ch.before)
	}
	w.decideSecret(key, ch, w.Connect)
}

// decideSecret gathers the view of key's changed Secret ch, and carries
// out decide's answer: a rotation of the connected cluster (to ch's Secret
// if it uses a revision before it, else to the source's current config:
// never older than those it read), the open breaker's probe and, with
// connect, a dial of a cluster not connected. A cluster dialing keeps ch
// for its dial's end: the dial may connect with, or fail for, what it
// read before this change.
func (w *SecretWatcher) decideSecret(key client.ObjectKey, ch change, connect bool) {
	v := view{in: inSecret, seen: revisionOf(ch.s), before: ch.before, connect: connect}
	c, ok := w.Pool.Peek(key)
	if ok {
		v.connected, v.applied = true, c.Revision()
	} else {
		v.dialing = w.Pool.State(key).Dialing
	}
	switch act, _ := decide(v); act {
	case actRotate:
		w.rotate(ch.s, ch.s, key, c)
	case actRefresh:
		w.rotate(ch.s, nil, key, c)
	case actRetry:
		w.Pool.Probe(key) // an open breaker: the new credentials may be what it lacked
		if v.connect {
			w.Pool.Connect(key)
		}
		if v.dialing {
			w.recs.keep(key, ch)
		}
	}
}

// rotate acts on the changed kubeconfig Secret ev of the connected cluster
// c, read from s (nil: from the source): in place, re-dial or refusal
// (see SecretWatcher).
func (w *SecretWatcher) rotate(ev, s *corev1.Secret, key client.ObjectKey, c *Cluster) {
	ctx, cancel := context.WithTimeout(context.Background(), DefaultRequestTimeout)
	defer cancel()
	switch out, err := c.refreshCredentials(ctx, s); out {
	case rotationInPlace:
		w.Logger.V(1).Info("credentials rotated in place", "cluster", key.String(), "revision", c.Revision())
	case rotationRefused:
		w.Logger.Error(err, "kubeconfig Secret changed but is refused; the cluster keeps its current credentials",
			"cluster", key.String())
		if w.Recorder != nil {
			w.Recorder.Event(ev, corev1.EventTypeWarning, "KubeconfigRefused", err.Error())
		}
	case rotationRedial:
		w.Pool.Redial(key)
	}
}

// sameKubeconfig reports whether obj is a Secret holding old's kubeconfig
// (an informer's resync, or a change of other fields).
func sameKubeconfig(old *corev1.Secret, obj any) bool {
	s, ok := obj.(*corev1.Secret)
	return ok && string(s.Data[KubeconfigSecretKey]) == string(old.Data[KubeconfigSecretKey])
}
