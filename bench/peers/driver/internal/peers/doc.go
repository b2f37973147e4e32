// Package peers is `make bench-peers` (the driver's default run) and
// `make bench-peers-smoke` (-smoke): each peer program (bench/peers/cct:
// Cluster API v1.8.4's ClusterCacheTracker, bench/peers/clustercache:
// v1.14.2's ClusterCache, bench/peers/clusterpool: this repository, and any
// -peer) runs in turn against one fleet, scenario by scenario (herd, dead,
// recovery, flapping; -run selects), the driver switching the fault
// proxies as the scenario says. Then bench/sim runs at the same scale and
// timings (-model-scale) for the model check.
//
// Reading the report: one table of the real figures, a row per scenario
// and strategy — when every object was reconciled, healthy reconciles per
// second, latency percentiles, worker-seconds blocked, requeues, errors,
// dials (to faulty clusters), recovery time, memory and goroutines; with
// -timings, the reconciles' phases and client-go's requests; then model
// against real, one row per figure, marking differences over 20 %.
// -model-from redoes the model check of a report's -json file; -smoke
// fails unless every peer reconciled.
package peers
