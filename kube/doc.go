// Package kube turns a clusterpool Pool into what a controller-runtime
// controller imports: a dialer that builds ready controller-runtime clients
// for workload clusters, a shared health prober, a reconcile trigger
// (source.Source) fed by the pool's events, a watcher that picks up rotated
// kubeconfig Secrets (switching a connected cluster to new credentials in
// place when nothing else changed; see SecretWatcher), an admission controller that decides from the Cluster
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
package kube
