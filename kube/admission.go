package kube

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/apiutil"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
)

// Admission decides which clusters the pool may dial, from the Cluster
// objects of the management cluster, as Cluster API's ClusterCache
// controller does, without kube importing Cluster API: a controller over
// Object whose reconcile
//   - forgets the cluster and removes it from the pool (Pool.Remove: its
//     client stops, its breaker stops probing it) when the object is gone
//     or Admit refuses it;
//   - otherwise admits it (Admitted reports true) and, with Connect, asks
//     the pool to connect it (Pool.Connect): the pool dials it if it holds
//     no client for it, dials none and its breaker is closed (an open
//     breaker keeps its backoff);
//   - an object of another UID than the one admitted under its name (the
//     Cluster deleted and created again, its delete and create seen as one
//     reconcile: the queue holds one item per name, a relist after a broken
//     watch shows only the new object) is a new cluster: the old one is
//     removed from the pool (Pool.Remove) before the new one is admitted,
//     so that no caller is handed the deleted cluster's client for it.
//     Reconcilers of the new object may run before Admission's: code that
//     hands out clients checks Current (see DialerOptions.ObjectUID).
//
// A Cluster being deleted (deletionTimestamp set) stays admitted until it
// is gone, as in ClusterCache: controllers clean up in the workload
// cluster while its object is deleted (add-ons uninstalled, Nodes
// drained). An Admit that refuses such objects disconnects them at once.
//
// Without it nothing removes a deleted Cluster, and its breaker probes it
// every open period forever. A cluster is admitted only once its object has
// been reconciled: until then Admitted is false. Hand Admitted to
// SecretWatcher.Admit, so that Secrets of clusters not admitted dial
// nothing (Reconciler.SetupWithManager does).
//
// Set the fields before SetupWithManager and do not change them after.
type Admission struct {
	// Pool is the pool the decisions apply to. Required.
	Pool ClusterPool
	// Object is the Cluster type: a typed object (e.g. &clusterv1.Cluster{})
	// the manager's scheme knows, or an *unstructured.Unstructured with its
	// GVK set. It is read from the manager's cache. Required.
	Object client.Object
	// Admit decides whether an existing object, also one being deleted,
	// is admitted (e.g. a filter on labels, or Cluster API's
	// status.initialization.infrastructureProvisioned). It receives a copy
	// of the object as Object's type. nil admits every such object. It runs
	// on the controller's workers, never under Admission's lock.
	Admit func(obj client.Object) bool
	// Connect asks the pool to dial each admitted cluster (see above), as
	// ClusterCache connects every Cluster, instead of waiting for a Get.
	Connect bool
	// Name names the controller. Empty means "clusterpool-admission-<kind>"
	// (lower case), suffixed "-2", "-3"… for the second and later
	// Admissions of that kind set up in the process, since
	// controller-runtime refuses two controllers of one name.
	Name string

	reader client.Reader
	retry  atomic.Int64 // SetRetry's time.Duration
	cached cachedUIDs   // the UIDs in the manager's cache, for Current
	// admitted holds the UID admitted under each name (client.ObjectKey →
	// types.UID): read by every Admitted and UID, written by Reconcile
	// (one at a time per key), with no lock of kube's.
	admitted sync.Map
}

// admissionNames counts the default names handed out, per name: a
// sync.Map of *atomic.Int64, taking no lock of kube's.
var admissionNames sync.Map

// SetupWithManager adds the controller to mgr, with opts (e.g.
// MaxConcurrentReconciles) and preds on Object's events (e.g. Cluster API's
// WatchFilterValue predicate), and to mgr's cache an index of Object that
// records each object's UID for Current (it indexes no value) and a delete
// handler. A predicate that drops an object's update or delete leaves its
// last decision in force. It returns an error matching ErrInvalidOptions,
// naming the field, when Pool or Object is missing or Object's kind is
// unknown.
func (a *Admission) SetupWithManager(mgr ctrl.Manager, opts controller.Options, preds ...predicate.Predicate) error {
	if isNilPool(a.Pool) {
		return invalidOptions(errors.New("Admission.Pool must not be nil"))
	}
	if err := knownType(mgr.GetScheme(), a.Object); err != nil {
		return invalidOptions(fmt.Errorf("Admission.Object: %w", err))
	}
	gvk, _ := apiutil.GVKForObject(a.Object, mgr.GetScheme()) // checked by knownType
	name := a.Name
	if name == "" {
		name = defaultAdmissionName(gvk.Kind)
	}
	a.reader = mgr.GetCache()
	if err := a.watchUIDs(mgr, name); err != nil {
		return err
	}
	return ctrl.NewControllerManagedBy(mgr).Named(name).
		For(a.Object, builder.WithPredicates(preds...)).
		WithOptions(opts).Complete(a)
}

// defaultAdmissionName returns "clusterpool-admission-<kind>", suffixed
// with a count from the second call for one kind on.
func defaultAdmissionName(kind string) string {
	name := "clusterpool-admission-" + strings.ToLower(kind)
	c, _ := admissionNames.LoadOrStore(name, new(atomic.Int64))
	if n := c.(*atomic.Int64).Add(1); n > 1 {
		return fmt.Sprintf("%s-%d", name, n)
	}
	return name
}

// Admitted reports whether the cluster is admitted: its object exists and
// Admit accepted it when last reconciled. It is safe for concurrent use
// and takes no lock.
func (a *Admission) Admitted(key client.ObjectKey) bool {
	_, ok := a.admitted.Load(key)
	return ok
}

// SetRetry makes an Admission with Connect connect a cluster again d
// after each of its dials that failed (pool.DialFailed: the breaker stayed
// closed), while it stays admitted and not connected, as Cluster API's
// ClusterCache retries every ConnectionCreationRetryInterval; an open
// breaker probes the cluster itself. The Reconciler whose Admission is a
// carries the retries out. Zero or less, the default, retries nothing. It
// is safe for concurrent use, also while the manager runs.
func (a *Admission) SetRetry(d time.Duration) { a.retry.Store(int64(max(d, 0))) }

// retryDelay is SetRetry's delay.
func (a *Admission) retryDelay() time.Duration { return time.Duration(a.retry.Load()) }

// retried is the decision on key's object again, SetRetry's delay after
// a failed dial: a cluster still admitted and not connected is connected.
func (a *Admission) retried(key client.ObjectKey) {
	if uid := a.UID(key); uid != "" {
		_, connected := a.Pool.Peek(key)
		a.act(key, view{in: inObject, present: true, uid: uid, admitted: uid, connect: a.Connect, connected: connected})
	}
}

// Reconcile applies the decision for one object.
func (a *Admission) Reconcile(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	obj, ok := a.Object.DeepCopyObject().(client.Object)
	if !ok {
		return reconcile.Result{}, fmt.Errorf("kube: Admission.Object %T does not copy to a client.Object", a.Object)
	}
	err := a.reader.Get(ctx, req.NamespacedName, obj)
	switch {
	case apierrors.IsNotFound(err):
		a.refuse(req.NamespacedName)
	case err != nil:
		return reconcile.Result{}, fmt.Errorf("kube: reading %s: %w", req.NamespacedName, err)
	case a.Admit != nil && !a.Admit(obj):
		a.refuse(req.NamespacedName)
	default:
		a.admit(req.NamespacedName, obj.GetUID())
	}
	return reconcile.Result{}, nil
}

// refuse forgets key, then acts on decide's answer: from then on callers
// that check Admitted do not ask for it.
func (a *Admission) refuse(key client.ObjectKey) {
	a.admitted.Delete(key)
	a.act(key, view{in: inObject})
}

// admit remembers key with uid, then acts on decide's answer: with
// Connect, a dial starts if nothing is connected, dialing or backing off.
// If another UID was admitted under key, the pool's cluster is that
// object's: it is removed first.
func (a *Admission) admit(key client.ObjectKey, uid types.UID) {
	var prev types.UID
	if v, ok := a.admitted.Swap(key, uid); ok {
		prev, _ = v.(types.UID)
	}
	_, connected := a.Pool.Peek(key)
	a.act(key, view{in: inObject, present: true, uid: uid, admitted: prev, connect: a.Connect, connected: connected})
}

// act carries out decide's answer for v, the view of key's object; a
// removal of another incarnation is followed by the decision about the
// new one, which the record now holds.
func (a *Admission) act(key client.ObjectKey, v view) {
	act, _ := decide(v)
	if act == actRemove {
		a.Pool.Remove(key)
		if !v.present {
			return
		}
		v.admitted, v.connected = v.uid, false
		act, _ = decide(v)
	}
	if act == actConnect {
		a.Pool.Connect(key)
	}
}
