// Package workload is what the three peer programs of bench/peers share: the
// workload controller (a controller-runtime manager whose reconciler gets a
// workload cluster's client from the strategy under test and reads and
// writes one ConfigMap in that cluster), the figures it records, and the
// flags-in, JSON-out protocol with the driver (bench/peers/driver), and,
// for scale runs, the idle window (-idle, package idle), the load window
// that follows it (-load-rate, package load) and the dead-cluster
// detection that ends the run (-detect-within: -sample-connected only for
// the -sample-clusters, while the driver kills them) and, for the success
// tail, the timings of reconciles and requests (-timings).
//
// It is a module of its own, requiring the oldest client-go and
// controller-runtime of the three peers (those of Cluster API v1.8.4), so
// that each peer module resolves it against its own Cluster API's versions.
// Only APIs that are the same from controller-runtime v0.18 to v0.25 are
// used here; what differs (how a strategy is built and how its cluster
// source is added to the controller) lives in the peers' main packages.
package workload
