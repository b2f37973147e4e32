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
//
// With -gray it is `make bench-gray` (issue 43) instead: every Cluster's
// kubeconfig points at its own internal/grayproxy (fleet.StartGray), and
// the classes of fleet.LayGray are laid on the fleet: 10 % slow (every
// answer 10× the apiserver's time), 10 % at 40 % errors, 10 % throttled
// (429 with Retry-After), one at 60 % and one at 20 % errors. Each strategy
// runs twice on the same saturated workload: a baseline with every proxy
// passing, and a gray run in which the faults start after a warm-up. The
// peer gets the faults' start as -measure-from and samples the gray
// Clusters (-sample-connected).
//
// Reading the gray report, per strategy and class: the healthy Clusters'
// successful-reconcile p99 from the faults' start, gray ÷ baseline (bar
// ≤ 1.10); the seconds until the 60 %-error Cluster is found — its breaker
// open, or for a strategy without one (ClusterCache) its GetClient
// answering not connected — (bar ≤ 30 s, "never" if it was not); for
// throttled and 20 %-error Clusters, breaker opens and disconnects per
// 5 minutes of faults (bar ≤ 1; opens are n/a without a breaker), and the
// share of the requests client-go sent them (the peer's count per host,
// each attempt, also those a guard below client-go refused) that reached
// their proxy (its count in the class's mode; bar ≥ 95 %). A class of
// several Clusters reports its worst. -gray-from prints a report again.
package peers
