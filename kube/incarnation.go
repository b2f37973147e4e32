package kube

import (
	"context"
	"sync"

	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// A Cluster object deleted and created again under its name (another UID,
// see admission_uid.go) usually has another kubeconfig Secret, pointing at
// other machines. A ConfigSource that reads Secrets through a cache (the
// manager's, or Cluster API's Secret caching client) may still hold the
// deleted Secret when the new Cluster is admitted: a watch that broke,
// after a management apiserver restart say, comes back only after the
// reflector's backoff, up to a minute, while the Cluster informer already
// delivered the new object. A dial that read the cache then would connect
// the new incarnation to the deleted one's cluster, and Admission.Current
// would hold the client current (it records the new UID).
//
// So the Dialer asks its ConfigSource for a fresh read (NeedsFreshConfig)
// when a dial's UID (DialerOptions.ObjectUID) is not the UID it last
// trusted the cache for under that name, and goes on asking until the
// cache serves the kubeconfig the fresh read returned. The first dial of
// a name in the process trusts the cache: it synced before the manager
// started the controllers that dial. Endpoint checks (IsEndpointCheck)
// and rotations (SecretWatcher hands the Secret of its event) read as
// they always did.

// freshConfigKey marks the context of a ConfigSource read that must not
// come from a cache (NeedsFreshConfig).
type freshConfigKey struct{}

// NeedsFreshConfig reports whether ctx is that of a ConfigSource read for
// a dial that must not be served from a cache: the dial of a Cluster
// object whose name the Dialer dialed before for another object (another
// UID, or one unknown: see DialerOptions.ObjectUID), before the source's
// cache has been seen to serve the new object's kubeconfig. A ConfigSource that reads
// through a cache reads from the apiserver then (SecretSource.Live); one
// that has no cache may ignore it. After such a dial connects, the Dialer
// reads the config once more with a context that does not carry the mark,
// to learn whether the cache has caught up.
func NeedsFreshConfig(ctx context.Context) bool {
	v, _ := ctx.Value(freshConfigKey{}).(bool)
	return v
}

// incarnations holds, by name (client.ObjectKey → types.UID), the UID of
// the object whose kubeconfig the Dialer trusts its ConfigSource's cache
// to serve: the UID of the name's first dial in the process, replaced by
// that of a later object once a dial for it connected and the cache
// served the kubeconfig its fresh read returned. A name's entry stays
// after its cluster leaves the pool (the name may come back, which is
// when the entry matters): one entry per name dialed with a UID. It is a
// sync.Map, written by the dials alone, taking no lock of kube's.
type incarnations struct{ uids sync.Map }

// begin returns the UID trusted now under key (to pass to trust), and
// whether a dial of key for uid ("" unknown) must read its config fresh:
// key has a trusted UID and it is not uid. A known uid becomes key's
// trusted one if key has none yet.
func (in *incarnations) begin(key client.ObjectKey, uid types.UID) (trusted types.UID, fresh bool) {
	if uid == "" {
		v, ok := in.uids.Load(key)
		if !ok {
			return "", false
		}
		trusted, _ = v.(types.UID)
		return trusted, true // an unknown object under a name dialed before
	}
	v, loaded := in.uids.LoadOrStore(key, uid)
	trusted, _ = v.(types.UID)
	return trusted, loaded && trusted != uid
}

// trust makes uid the UID trusted under key, unless another dial changed
// it since it was trusted (from trusted) or uid is unknown.
func (in *incarnations) trust(key client.ObjectKey, trusted, uid types.UID) {
	if uid != "" {
		in.uids.CompareAndSwap(key, trusted, uid)
	}
}

// freshIf marks ctx for a fresh read (NeedsFreshConfig) if fresh.
func freshIf(ctx context.Context, fresh bool) context.Context {
	if !fresh {
		return ctx
	}
	return context.WithValue(ctx, freshConfigKey{}, true)
}

// settle is the end of a dial of key for uid that read its config fresh
// (revision rev) and connected: if the source, read as usual, serves the
// same revision now, its cache has caught up and is trusted for uid from
// then on (trusted is what begin returned); else the next dial of key
// reads fresh again.
func (d *Dialer) settle(ctx context.Context, key client.ObjectKey, trusted, uid types.UID, rev string) {
	if _, cached, err := d.src.Config(ctx, key); err == nil && cached == rev {
		d.incarnations.trust(key, trusted, uid)
	}
}
