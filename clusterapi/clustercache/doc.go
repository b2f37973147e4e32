// Package clustercache is a drop-in replacement for Cluster API's
// sigs.k8s.io/cluster-api/controllers/clustercache (v1.14) on clusterpool:
// a provider switches by changing one import path in its main.go, and
// nothing else:
//
//   - "sigs.k8s.io/cluster-api/controllers/clustercache"
//   - "github.com/clusterpool/clusterpool/clusterapi/clustercache"
//
// (plus a require of github.com/clusterpool/clusterpool/clusterapi in its
// go.mod). Every type is an alias of Cluster API's (Options,
// ClusterCache, Watcher, WatchForProbeFailure, …), ErrClusterNotConnected
// is Cluster API's own variable, and SetupWithManager has Cluster API's
// signature, so the reconcilers' ClusterCache fields take its result.
//
// # What SetupWithManager builds
//
// A clusterpool Pool of workload-cluster clients (kube.NewPool), dialed by
// a kube.Dialer reading kubeconfig Secrets through Options.SecretClient
// (kube.SecretSource, under DefaultKubeconfigPolicy: what ClusterCache
// connects with, but local files), and through the manager's APIReader
// for a Cluster created again under its name (see below); an admission
// controller named "clustercache" (kube.Admission) on the Cluster objects;
// the shared
// kube.Prober (GET /readyz every 10 s, 5 s timeout: Cluster API's cadence,
// not clusterpool's, which lets live connections stand in for most
// probes); a kube.SecretWatcher
// that re-dials a cluster as soon as its kubeconfig Secret changes. The
// watcher and the Prober run as one kube.Reconciler, on one subscription
// to the pool's events, which also sets connection_up; each probe's
// outcome reaches the series and GetClusterSource through
// kube.ProberOptions.Probed. The same reconciler connects again, after
// kube.Admission.SetRetry's delay, a Cluster the admission admitted whose
// dial failed, as ClusterCache's Reconcile does. SetupWithManagerAndPolicy
// takes another kube.KubeconfigPolicy.
//
// Telemetry needs no line in main.go. Cluster API's series
// capi_cluster_cache_connection_up, capi_cluster_cache_healthcheck and
// capi_cluster_cache_healthchecks_total{status} are set with Cluster API's
// names, labels, help and meaning on controller-runtime's registry (this
// package's collectors replace Cluster API's there), and a Cluster's series
// are deleted when it goes; clusterpool's own clusterpool_* series are on
// the same registry (kube/metrics). With OTEL_EXPORTER_OTLP_ENDPOINT or
// OTEL_EXPORTER_OTLP_TRACES_ENDPOINT set, the pool's spans are exported over
// OTLP (OTEL_EXPORTER_OTLP_PROTOCOL grpc or http/protobuf, the default;
// the other OTEL_EXPORTER_OTLP_* variables, OTEL_SERVICE_NAME, default
// DefaultServiceName, and OTEL_RESOURCE_ATTRIBUTES apply) while the manager
// runs, and flushed when it stops; without them nothing is exported and
// no exporter runs.
//
// Options map as follows:
//   - SecretClient reads the kubeconfig Secrets (required), but those of
//     a Cluster created again under its name until it serves them (see
//     below).
//   - WatchFilterValue: the admission controller sees only Clusters with
//     that cluster.x-k8s.io/watch-filter label (Cluster API's
//     predicates.ResourceHasFilterLabel), so only they are connected and
//     have GetClusterSource events.
//   - ClusterFilter: a Cluster it refuses is not admitted; one that was is
//     removed from the pool.
//   - Cache.SyncPeriod, ByObject and DefaultTransform go to each cluster's
//     cache; Cache.Indexes are added inside the dial, before the cache
//     starts (kube.DialerOptions.Indexes).
//   - Client.Timeout (default 10 s) is each request's timeout and bounds
//     each cached Get and List; QPS (20), Burst (30) and UserAgent
//     (required) apply to each cluster's clients; Client.Cache.DisableFor
//     types are read live. The cached client also reads unstructured
//     objects from the cache, as Cluster API's does.
//   - controller.Options configure the admission controller; its
//     MaxConcurrentReconciles is also the pool's MaxTotalDials.
//
// A Cluster is connected once it exists, has
// status.initialization.infrastructureProvisioned true and passes the
// filters, and stays connected while it is being deleted; a Cluster gone
// or filtered out is removed from the pool (its
// client stops, its breaker stops probing it). The initial sync of the
// indexes' informers may take up to 5 minutes (InitialSyncTimeout) without
// holding up the dial. In-cluster detection (POD_NAMESPACE, POD_NAME,
// POD_UID) is on, as in Cluster API.
//
// # Methods
//
// GetClient, GetReader, GetUncachedClient and GetRESTConfig never dial:
// they return the pool's client, or at once a *NotConnectedError, which
// matches both ErrClusterNotConnected and the pool's sentinel saying why,
// with a pool.RetryAfter while a probe or dial is due or out (also while
// the breaker is half-open), so that kube.Requeue requeues (see
// NotConnectedError). The returned clients' errors that come from the
// request guard (the breaker opened, the cluster stopped, the bulkhead is
// full, no first byte in time) match ErrClusterNotConnected too, so the
// Machine controller reports ConnectionDown, not InternalError.
//
// Watch adds a Watcher once per connection and name; a new connection
// forgets them, and callers add their watches again after a reconnect, as
// with Cluster API. GetHealthCheckingState comes from the pool
// (pool.ClusterState): dials and health probes count as probes, as in
// Cluster API. GetClusterSource's sources send an event on each connect and
// disconnect, and once per WatchForProbeFailure duration without a
// successful probe (Cluster API's rule, checked after each probe as Cluster
// API checks it after each reconcile); the mapFunc gets the
// *clusterv1.Cluster from the manager's cache.
//
// # What differs from Cluster API's ClusterCache
//
//   - Failed connects back off: a failed dial is retried after 5 s (the
//     admission's requeue of a Cluster not connected), and
//     after ProbeFailureThreshold (5) failures in a row the breaker opens
//     for 5 s, doubling to 30 s (jittered), instead of a fixed 30 s; a dial
//     that hangs to its 10 s deadline opens it at once for 30 s. While
//     it is open, the reconciler checks the cluster's endpoint (GET
//     /readyz on a connection of its own: 1 s after it opened, 2 s later,
//     then every 3 s); a 200 ends the open period and the half-open
//     probe dials at once (kube.Prober's revive).
//   - A connected cluster is dropped after ProbeFailureThreshold (5)
//     failed health probes in a row, as in Cluster API (clusterpool's
//     default is 3), but its probe is GET /readyz where Cluster API sends
//     GET /. GetHealthCheckingState's ConsecutiveFailures goes on counting
//     while it is down.
//   - Requests on established clients are guarded (kube.RequestOptions):
//     bulkhead, first-byte deadline, and cancellation once the breaker
//     opens. Their outcomes do not feed the breaker (no passive health), so
//     that only probes decide a disconnect, as in Cluster API.
//   - A rotated kubeconfig Secret is picked up at once.
//   - A Cluster deleted and created again under its name (another UID)
//     gets a new connection even when its delete and create reach the
//     controller as one reconcile (kube.Admission); Cluster API keeps the
//     deleted Cluster's connection then. Until the new one is connected,
//     GetClient, GetReader, GetUncachedClient, GetRESTConfig and Watch
//     answer ErrClusterNotConnected (and pool.ErrRemoved) once the
//     manager's cache holds the new Cluster, rather than hand a reconcile
//     of it the deleted one's client (kube.Admission.Current). The new
//     Cluster's dials read its kubeconfig Secret from the apiserver (the
//     manager's APIReader: one GET each), not from SecretClient, until
//     SecretClient serves the Secret that read returned: a Secret cache
//     that lags the Cluster informer (its watch broke, after a management
//     apiserver restart say) would otherwise connect the new Cluster to
//     the deleted one's machines, as Cluster API's does (it reads
//     SecretClient). A Secret not created yet fails the dial, retried as
//     any failed connect. Each Cluster's first connect after the manager
//     starts, and every other connect, reads SecretClient.
//   - Kubeconfig Secrets may not name local files (tokenFile,
//     client-certificate, client-key, certificate-authority), and may not
//     hold exec or auth-provider entries even outside the current context
//     (Cluster API refuses them only in it); the server must be an http(s)
//     URL without userinfo, query or fragment. See DefaultKubeconfigPolicy.
//   - clusterpool's metrics and, with OTLP configured, traces come on top
//     of Cluster API's series.
//   - Controllers still return ErrClusterNotConnected as an error, so
//     clusterpool's RetryAfter-driven requeues (kube.Requeue) stay unused
//     until a controller uses them.
//
// The test hooks Cluster API's suites type-assert are there: Shutdown and
// SetConnectionCreationRetryInterval (its interval becomes the breaker's
// open period, and the retry delay, of clusters first seen afterwards).
// The returned ClusterCache is also a reconcile.Reconciler whose Reconcile
// waits for the dial it starts, as Cluster API's connects synchronously.
package clustercache
