// Package bench measures clusterpool against the behaviour it replaces.
//
// [CCT] models Cluster API v1.8's ClusterCacheTracker client lookup
// (sigs.k8s.io/cluster-api/controllers/remote): a map of accessors
// behind a sync.RWMutex and a keyed mutex taken with TryLock only, so that a
// second caller during a client creation gets [ErrClusterLocked] at once.
// The benchmarks in this package run it side by side with a clusterpool
// Pool and with a bare sync.Map load, the floor of any lock-free lookup.
//
// Run them with `make bench`; results and the machine are in bench/README.md.
package bench
