package kube

import (
	"errors"
	"fmt"
	"net/http"
	"reflect"
	"slices"
	"strings"
	"time"

	"github.com/go-logr/logr"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/apiutil"

	"github.com/clusterpool/clusterpool/internal/opt"
)

// Defaults of DialerOptions.
const (
	DefaultRequestTimeout   = 10 * time.Second
	DefaultQPS              = 20
	DefaultBurst            = 30
	DefaultReadyzTimeout    = 5 * time.Second
	DefaultCacheSyncTimeout = 30 * time.Second
)

// DialerOptions configures a Dialer. Zero fields are the defaults.
type DialerOptions struct {
	// Scheme maps Go types to kinds. nil means client-go's scheme.
	Scheme *runtime.Scheme
	// RequestTimeout is the REST config's per-request timeout, for the
	// requests of the cluster's clients. The cache's lists and watches do
	// not have it (a watch would end after it and be re-established); they
	// end when the cluster is stopped. Zero means 10s.
	RequestTimeout time.Duration
	// QPS and Burst rate-limit each cluster's clients. Zero means 20 and 30.
	QPS   float32
	Burst int
	// UserAgent is the User-Agent header of every request of the cluster's
	// clients and cache (the REST config's UserAgent). Empty keeps the
	// ConfigSource's, or, if it has none, client-go's default
	// (rest.DefaultKubernetesUserAgent: "<binary>/<version> (<os>/<arch>)
	// kubernetes/<commit>"). It must be a valid header value (no control
	// characters).
	UserAgent string
	// ReadyzTimeout bounds the reachability check of a dial. Zero means 5s.
	ReadyzTimeout time.Duration
	// CacheSyncTimeout bounds how long a dial waits for the initial sync of
	// the informers of WatchTypes and Indexes. Zero means 30s; the pool's
	// DialTimeout also bounds it. See InitialSyncTimeout for a sync that
	// may outlast the dial.
	CacheSyncTimeout time.Duration
	// InitialSyncTimeout bounds the initial sync of the informers of
	// WatchTypes and Indexes, counted from the start of the dial, and lets
	// it outlast the dial: a cluster whose Node list takes longer than the
	// pool's DialTimeout still connects. Cluster API's ClusterCache allows
	// 5 minutes.
	//
	// Zero means the sync is part of the dial: the dial fails unless the
	// sync ends within CacheSyncTimeout and the dial's deadline (the pool's
	// DialTimeout).
	//
	// When set, the dial waits for the sync until CacheSyncTimeout, until
	// InitialSyncTimeout, or until nine tenths of the time between its start
	// and its context's deadline have passed, whichever comes first. If the
	// sync is not done by then and InitialSyncTimeout has not passed, the
	// dial returns the Cluster anyway (it answered /readyz, its REST mapper
	// and its cache run): its informers go on syncing, and its cached reads
	// of a type not synced yet wait at most ReadTimeout. If the sync is
	// still not done once InitialSyncTimeout has passed, the pool NewPool
	// built with this Dialer drops it and dials again (pool.Pool.Redial,
	// which keeps the breaker's history), as ClusterCache fails the connect
	// and retries it; a Dialer used without NewPool only logs it.
	InitialSyncTimeout time.Duration
	// ReadTimeout bounds each Get and List of Cluster.Client, as
	// ClusterCache's client does: a cached read of a type whose informer
	// has not synced (a type read for the first time, a cluster that stops
	// answering its list) fails with a timeout error matching
	// ErrReadTimeout instead of blocking its caller until the sync. Zero
	// means RequestTimeout.
	ReadTimeout time.Duration
	// WatchTypes are object types whose informers start, and sync, during
	// the dial, so that the first cached read does not block a worker.
	WatchTypes []client.Object
	// Indexes are the field indexes of each cluster's cache, added inside
	// the dial before the cache starts (controller-runtime's IndexField);
	// each creates its object type's informer, which syncs during the dial
	// like those of WatchTypes. Cluster API's Machine controller needs
	// NodeProviderIDIndex. Each must have an Object the Scheme knows, a
	// Field and an Extract.
	Indexes []Index
	// DisableFor are object types that Cluster.Client reads from the
	// apiserver instead of the cache, so that reading them starts no
	// informer (controller-runtime's client.CacheOptions.DisableFor): Cluster
	// API's Machine controller reads Pods this way when it drains a node.
	// Each must be known to the Scheme.
	DisableFor []client.Object
	// Unstructured makes Cluster.Client read unstructured objects from the
	// cache too (client.CacheOptions.Unstructured); false reads them from
	// the apiserver. ClusterCache sets it.
	Unstructured bool
	// InCluster lets the dial reach a workload cluster that runs this
	// controller through the in-cluster endpoint (KUBERNETES_SERVICE_HOST
	// and _PORT, and the service account's CA), as ClusterCache does: when
	// POD_NAMESPACE, POD_NAME and POD_UID are set (read by NewDialer) and
	// the cluster holds that Pod with that UID. Without these variables it
	// does nothing.
	InCluster bool
	// MapperProvider builds each cluster's RESTMapper, for its clients and
	// its cache (as controller-runtime's cluster.Options.MapperProvider
	// does); it is called once per dial, with the dial's config and HTTP
	// client. apiutil.NewDynamicRESTMapper gives each cluster a
	// controller-runtime dynamic RESTMapper of its own, which holds the
	// cluster's whole discovery.
	//
	// nil means a mapper that, like the dynamic RESTMapper, reads the
	// cluster's discovery when first used and again (all of GET /api and
	// /apis) when a lookup finds no match (a CRD installed since), but
	// holds no mapping of its own: clusters whose discoveries map the same
	// (the same groups, versions, and resources with the same kinds, names
	// and scopes) share one mapping per Dialer, built once. A server
	// without aggregated discovery gets a dynamic RESTMapper of its own.
	MapperProvider func(cfg *rest.Config, httpClient *http.Client) (meta.RESTMapper, error)
	// Cache is passed to cache.New (Scheme, Mapper and HTTPClient are set by
	// the dialer).
	Cache cache.Options
	// Logger receives the dialer's messages; never credentials. The zero
	// value discards them.
	Logger logr.Logger
	// Requests configures the protection of requests on established
	// clients (bulkhead, first-byte deadline, passive health, rejection
	// and cancellation once the breaker opens); zero means all on.
	Requests RequestOptions
	// ObjectUID, if set, returns the UID of the object a dial is for
	// (Admission.UID), read when the dial begins and kept in Cluster.UID,
	// so that Admission.Current can tell a client dialed for a deleted
	// Cluster from one for the Cluster now under its name, and so that
	// the dials of an object other than the one whose config the
	// ConfigSource's cache was last trusted to serve under its name read
	// it fresh (NeedsFreshConfig, SecretSource.Live). It runs on the
	// dial's goroutine; "" means unknown (a name dialed before for a known
	// UID then reads fresh too). nil records no UID and reads nothing
	// fresh.
	ObjectUID func(key client.ObjectKey) types.UID
}

// Index is a field index of each cluster's cache (see DialerOptions.Indexes).
type Index struct {
	// Object is the indexed type, e.g. &corev1.Node{}.
	Object client.Object
	// Field names the index, as client.MatchingFields uses it.
	Field string
	// Extract returns the values of obj to index.
	Extract client.IndexerFunc
}

// validate checks the fields of o that NewDialer does not default; o.Scheme
// must be set.
func (o *DialerOptions) validate() error {
	if err := opt.FirstNegative("DialerOptions.", opt.F("RequestTimeout", o.RequestTimeout),
		opt.F("QPS", o.QPS), opt.F("Burst", o.Burst), opt.F("ReadyzTimeout", o.ReadyzTimeout),
		opt.F("CacheSyncTimeout", o.CacheSyncTimeout), opt.F("ReadTimeout", o.ReadTimeout),
		opt.F("InitialSyncTimeout", o.InitialSyncTimeout)); err != nil {
		return err
	}
	if strings.ContainsFunc(o.UserAgent, func(r rune) bool { return (r < 0x20 && r != '\t') || r == 0x7f }) {
		return errors.New("DialerOptions.UserAgent must be a valid header value (no control characters)")
	}
	for i, obj := range o.DisableFor {
		if err := knownType(o.Scheme, obj); err != nil {
			return fmt.Errorf("DialerOptions.DisableFor[%d]: %w", i, err)
		}
	}
	for i, ix := range o.Indexes {
		if err := ix.validate(o.Scheme); err != nil {
			return fmt.Errorf("DialerOptions.Indexes[%d]%w", i, err)
		}
		if slices.ContainsFunc(o.DisableFor, func(obj client.Object) bool { return sameKind(o.Scheme, obj, ix.Object) }) {
			return fmt.Errorf("DialerOptions.Indexes[%d].Object: %T is in DisableFor, whose reads bypass the cache and its indexes", i, ix.Object)
		}
	}
	return o.Requests.validate()
}

// validate returns an error starting with the offending field's suffix.
func (ix Index) validate(s *runtime.Scheme) error {
	switch {
	case ix.Field == "":
		return errors.New(".Field must not be empty")
	case ix.Extract == nil:
		return errors.New(".Extract must not be nil")
	}
	if err := knownType(s, ix.Object); err != nil {
		return fmt.Errorf(".Object: %w", err)
	}
	return nil
}

// knownType returns an error unless obj is a non-nil object whose kind s
// resolves (an unstructured object needs its GVK set).
func knownType(s *runtime.Scheme, obj client.Object) error {
	if isNil(obj) {
		return errors.New("must not be nil")
	}
	if _, err := apiutil.GVKForObject(obj, s); err != nil {
		return fmt.Errorf("%T is not a known kind: %w", obj, err)
	}
	return nil
}

// sameKind reports whether a and b, both known to s, are of one kind.
func sameKind(s *runtime.Scheme, a, b client.Object) bool {
	ga, erra := apiutil.GVKForObject(a, s)
	gb, errb := apiutil.GVKForObject(b, s)
	return erra == nil && errb == nil && ga == gb
}

// withDefaults fills the zero fields of o with their defaults.
func (o *DialerOptions) withDefaults() {
	o.Requests.withDefaults()
	opt.Default(&o.RequestTimeout, DefaultRequestTimeout)
	opt.Default(&o.QPS, DefaultQPS)
	opt.Default(&o.Burst, DefaultBurst)
	opt.Default(&o.ReadyzTimeout, DefaultReadyzTimeout)
	opt.Default(&o.CacheSyncTimeout, DefaultCacheSyncTimeout)
	opt.Default(&o.ReadTimeout, o.RequestTimeout)
}

// isNil reports whether obj is nil or a nil pointer in an interface.
func isNil(obj client.Object) bool {
	if obj == nil {
		return true
	}
	v := reflect.ValueOf(obj)
	return v.Kind() == reflect.Pointer && v.IsNil()
}
