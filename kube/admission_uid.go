package kube

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"

	"k8s.io/apimachinery/pkg/types"
	toolscache "k8s.io/client-go/tools/cache"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// A Cluster object deleted and created again under its name is another
// cluster (another UID), possibly on other machines, with another Secret.
// Admission removes the old one's client when it reconciles the new
// object, but reconcilers that read the new object from the manager's
// cache may run first: Current lets the code that hands out clients refuse
// the old one meanwhile. The pieces:
//   - Admission.UID is the UID admitted under a name; given to the Dialer
//     as DialerOptions.ObjectUID, each dial records it in Cluster.UID;
//   - cachedUIDs holds the UID of each object in the manager's cache,
//     written before a reader can see the object;
//   - Admission.Current compares a Cluster's UID with it;
//   - the Dialer reads the config of a dial for a UID other than the one
//     it last trusted its ConfigSource's cache for under that name fresh
//     (NeedsFreshConfig, SecretSource.Live), so that the new Cluster is
//     not dialed with the deleted one's Secret from a lagging cache.

// UID returns the UID of the object admitted under key, or "" if key is
// not admitted. Pass it as DialerOptions.ObjectUID. It takes no lock.
func (a *Admission) UID(key client.ObjectKey) types.UID {
	v, _ := a.admitted.Load(key)
	uid, _ := v.(types.UID)
	return uid
}

// Current reports whether c was dialed for the object that the manager's
// cache holds now under c.Key. It is false only when c records a UID (see
// DialerOptions.ObjectUID) and the cache holds an object of another UID
// under that name: the Cluster was deleted and created again, and
// Admission has not reconciled the new one yet (when it does, it removes
// c). A reconciler that read the new object from the cache must not be
// handed c: refuse it as not connected. An object missing from the cache
// (deleted) leaves c current, as it is until Admission removes it.
//
// A nil Admission, or one not set up with a manager, holds every Cluster
// current. Current takes no lock and copies nothing; it is safe for
// concurrent use.
func (a *Admission) Current(c *Cluster) bool {
	if a == nil || c == nil || c.UID == "" {
		return true
	}
	uid, ok := a.cached.get(c.Key)
	return !ok || uid == c.UID
}

// cachedUIDs are the UIDs of the objects of one type in the manager's
// cache, by name. An index of the cache (IndexField) records each object
// it indexes and returns no value: client-go runs index functions under
// its store's lock, while it writes the object, so a reader that sees an
// object in the cache finds its UID here (an event handler would run
// later). A delete event forgets the deleted object's UID, unless another
// object was written under its name since. The zero value holds none. It
// is a sync.Map (client.ObjectKey → types.UID): every GetClient reads it,
// without a lock.
type cachedUIDs struct{ uids sync.Map }

// record keeps obj's UID under its name; it runs under the cache's store
// lock and takes no lock.
func (u *cachedUIDs) record(obj client.Object) []string {
	u.uids.Store(client.ObjectKeyFromObject(obj), obj.GetUID())
	return nil
}

// forget drops key's UID if it is still uid (the deleted object's).
func (u *cachedUIDs) forget(key client.ObjectKey, uid types.UID) {
	u.uids.CompareAndDelete(key, uid)
}

// get returns key's UID, and whether the cache holds an object under key.
func (u *cachedUIDs) get(key client.ObjectKey) (types.UID, bool) {
	v, ok := u.uids.Load(key)
	if !ok {
		return "", false
	}
	uid, ok := v.(types.UID)
	return uid, ok
}

// onDelete is the delete handler of the cache's informer of Object.
func (u *cachedUIDs) onDelete(obj any) {
	if t, ok := obj.(toolscache.DeletedFinalStateUnknown); ok {
		obj = t.Obj
	}
	if o, ok := obj.(client.Object); ok {
		u.forget(client.ObjectKeyFromObject(o), o.GetUID())
	}
}

// uidIndexes numbers the indexes watchUIDs adds, so that each Admission
// has its own, also several of one name on one manager (Cluster API's
// tests set up several ClusterCaches on one manager).
var uidIndexes atomic.Int64

// watchUIDs makes the manager's cache keep a.cached: an index of Object
// of its own, and a delete handler.
func (a *Admission) watchUIDs(mgr ctrl.Manager, name string) error {
	ctx := context.Background() // before the manager starts, these do not wait
	field := fmt.Sprintf("clusterpool.dev/uid-%s-%d", name, uidIndexes.Add(1))
	err := mgr.GetFieldIndexer().IndexField(ctx, a.Object, field, a.cached.record)
	if err != nil {
		return fmt.Errorf("kube: Admission %s: indexing the cache's UIDs: %w", name, err)
	}
	inf, err := mgr.GetCache().GetInformer(ctx, a.Object)
	if err == nil {
		_, err = inf.AddEventHandler(toolscache.ResourceEventHandlerFuncs{DeleteFunc: a.cached.onDelete})
	}
	if err != nil {
		return fmt.Errorf("kube: Admission %s: watching deletes: %w", name, err)
	}
	return nil
}
