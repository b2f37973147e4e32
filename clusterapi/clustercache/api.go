package clustercache

import (
	"sigs.k8s.io/cluster-api/controllers/clustercache"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// The types of Cluster API's clustercache package, under the same names, so
// that a provider's main.go and reconcilers compile unchanged against this
// package. They are aliases: values pass freely between the two packages,
// and a reconciler's ClusterCache field accepts what SetupWithManager
// returns.
type (
	// Options configures SetupWithManager; see the package doc for how
	// each field is honoured.
	Options = clustercache.Options
	// ClusterFilter decides which Clusters the cache handles.
	ClusterFilter = clustercache.ClusterFilter
	// CacheOptions are the options of each workload cluster's cache.
	CacheOptions = clustercache.CacheOptions
	// CacheOptionsIndex is a field index of each workload cluster's cache.
	CacheOptionsIndex = clustercache.CacheOptionsIndex
	// ClientOptions are the options of each workload cluster's clients.
	ClientOptions = clustercache.ClientOptions
	// ClientCacheOptions say which types the cached client reads live.
	ClientCacheOptions = clustercache.ClientCacheOptions
	// ClusterCache is the interface SetupWithManager returns.
	ClusterCache = clustercache.ClusterCache
	// HealthCheckingState is a cluster's probe history.
	HealthCheckingState = clustercache.HealthCheckingState
	// Watcher starts a watch on a workload cluster's cache.
	Watcher = clustercache.Watcher
	// WatcherOptions configure NewWatcher for client.Object and
	// ctrl.Request.
	WatcherOptions = clustercache.WatcherOptions
	// GetClusterSourceOption is an option of GetClusterSource.
	GetClusterSourceOption = clustercache.GetClusterSourceOption
	// GetClusterSourceOptions collects the GetClusterSource options.
	GetClusterSourceOptions = clustercache.GetClusterSourceOptions
	// WatchForProbeFailure makes GetClusterSource's source send an event
	// once no probe has succeeded for the duration.
	WatchForProbeFailure = clustercache.WatchForProbeFailure
)

// TypedWatcherOptions configure NewWatcher.
type TypedWatcherOptions[object client.Object, request comparable] = clustercache.TypedWatcherOptions[object, request]

// SourceWatcher is the part of a controller NewWatcher needs.
type SourceWatcher[request comparable] = clustercache.SourceWatcher[request]

// ErrClusterNotConnected is Cluster API's own sentinel (the same variable),
// so errors.Is(err, ErrClusterNotConnected) holds for either package's
// name. Every error of this package's ClusterCache that says a cluster is
// not reachable matches it; see NotConnectedError.
var ErrClusterNotConnected = clustercache.ErrClusterNotConnected

// NodeProviderIDIndex is Cluster API's index of Nodes by spec.providerID,
// which the Machine and KubeadmControlPlane controllers list by.
var NodeProviderIDIndex = clustercache.NodeProviderIDIndex

// NewWatcher returns a Watcher that adds a source.Kind on the workload
// cluster's cache to options.Watcher (Cluster API's NewWatcher).
func NewWatcher[object client.Object, request comparable](options TypedWatcherOptions[object, request]) Watcher {
	return clustercache.NewWatcher(options)
}

// NewFakeClusterCache is Cluster API's fake for unit tests: a ClusterCache
// that returns workloadClient for clusterKey.
func NewFakeClusterCache(workloadClient client.Client, clusterKey client.ObjectKey, watchObjects ...string) ClusterCache {
	return clustercache.NewFakeClusterCache(workloadClient, clusterKey, watchObjects...)
}

// NewFakeEmptyClusterCache is Cluster API's fake holding no cluster.
func NewFakeEmptyClusterCache() ClusterCache { return clustercache.NewFakeEmptyClusterCache() }
