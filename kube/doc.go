// Package kube turns a clusterpool Pool into what a controller-runtime
// controller imports: a dialer that builds ready controller-runtime clients
// for workload clusters, a shared health prober, a reconcile trigger
// (source.Source) fed by the pool's events, a watcher that picks up rotated
// kubeconfig Secrets, an admission controller that decides from the Cluster
// objects which clusters the pool may dial (and removes deleted ones), and a
// requeue helper.
//
// The dialer carries what Cluster API's ClusterCache options do (user
// agent, cache indexes, DisableFor and Unstructured reads, a bound on
// cached reads, an initial sync that may outlast the dial, in-cluster
// endpoint detection), so that a ClusterCache drop-in builds on it.
//
// Keys are client.ObjectKey values naming the Cluster object (namespace and
// name), as in Cluster API. Credentials never reach errors, logs, span
// attributes or events: the dialer reports a cluster by its key, and a
// kubeconfig that does not parse is reported without its content.
//
// Kubeconfig Secrets are untrusted input: SecretSource and ParseKubeconfig
// apply a KubeconfigPolicy before any client exists, which by default
// refuses exec and auth-provider plugins, file references, insecure TLS,
// proxies and impersonation, and hands only the current context to
// client-go. Each capability has its own opt-in.
//
// Constructor errors match ErrInvalidOptions and name the field; error
// strings start with "kube:".
//
// # Who does what
//
//   - Dialer (dialer.go, chain.go, incluster.go, initialsync.go): reads a
//     ConfigSource, builds the cluster's transport chain (transportChain
//     states its order), checks /readyz, switches to the in-cluster
//     endpoint (internal/incluster), builds a Cluster and warms its cache.
//     NewPool makes a pool.Pool dial with it.
//   - Cluster (cluster.go, readtimeout.go): one dialed cluster's clients,
//     cache and HTTP client; Stop ends them and closes every connection.
//   - ConfigSource, SecretSource, KubeconfigPolicy (config.go,
//     kubeconfig_policy.go): where configs come from, and what a kubeconfig
//     may hold (parsed and checked by internal/kubeconfigpolicy).
//   - guardedTransport, classTransport (transport.go, requests.go): each
//     request through the cluster's reqguard.Guard (bulkhead, first-byte
//     deadline, passive health).
//   - watchGzip (watchgzip.go): compressed watches decompressed member by
//     member (internal/watchgzip).
//   - rotator, generation, decide (rotator.go, generation.go,
//     credentials.go): credentials that change in place.
//   - SecretWatcher (secrets.go): changed kubeconfig Secrets: rotate in
//     place, or the pool's Redial or Connect.
//   - Prober, liveness (probe.go, liveness.go): health; the wire's reads
//     (HTTP/2 PING acks included) stand in for most GET /readyz.
//   - revive (revive.go, revive_check.go): the endpoint checks of a
//     cluster whose breaker is open, which end the open period once it
//     answers.
//   - Admission (admission.go), Source (source.go), Requeue (requeue.go):
//     which clusters may be dialed, reconcile triggers, reconcile results.
//   - Reconciler (reconciler.go, records.go): a SecretWatcher and a Prober
//     as one reconciler per cluster: one record per cluster under one lock,
//     one workqueue keyed by cluster, one subscription to the pool's events
//     (follow, events.go).
//   - internal/restmapper: each cluster's default RESTMapper, one mapping
//     shared per distinct discovery; internal/cachedread: Cluster.Client,
//     the Uncached client reading through the cache.
//
// # Locks
//
// Every lock is a leaf: while one is held, kube takes no other lock of its
// own or of the pool, does no network I/O and runs no user code (the pool,
// a ConfigSource, Admit and the Secret's parsing are called after the
// unlock). Each is held for a few map or field operations:
//
//  1. records.mu: each cluster's record (the pending Secret, the one kept
//     while a dial runs, the next probe tick).
//  2. rotator.mu: the live generations, their links' users, the TLS
//     settings, stopped.
//  3. generation.mu: a generation's phase changes, open streams and timer.
//
// Admission's admitted UIDs and cachedUIDs are sync.Maps, written one
// key at a time, and take no lock of kube's.
//
// internal/watchgzip and internal/restmapper document their own locks,
// leaves too. Two singleflights stand where a lock would be held across a
// request: restmapper.Mapper's loads (one discovery read per mapping it
// replaces) and rotator.flight (one ConfigSource read for the 401s of a
// generation).
// generation.close takes generation.mu, releases it, then takes rotator.mu
// (release).
//
// # Rotation
//
// Modelled on client-go's exec authenticator. A changed config goes through
// decide: nothing; refused (ErrCredentialsRefused: the cluster keeps its
// credentials); re-dial (anything but the credentials changed: the pool's
// Redial); or in place: the rotator swaps its current generation. A token
// change is a header swap on the same link (transport and connections); a
// certificate change gets a new link. A retired generation's requests end
// on the old credentials; once they have (after RequestTimeout at the
// latest: then they are canceled), its watches end with io.EOF and
// re-watch from their resourceVersion, and a link no generation uses
// closes its connections. Its one timer stops when it closes.
package kube
