// Package sim is the controller simulation behind `make bench-scenarios`: a
// workload controller (controller-runtime's real priority queue, its
// default since v0.22, or with Config.LegacyQueue client-go's rate-limiting
// workqueue; controller-runtime's default rate limiter and result handling; N workers,
// objects that each get their cluster's client and do a fixed amount of
// work) run against a simulated fleet with one of three ways of getting
// clients:
//
//   - "cct": Cluster API v1.8's ClusterCacheTracker (keyed TryLock,
//     ErrClusterLocked → RequeueAfter 1 min, the lock winner dials in its
//     worker, a health goroutine per cluster);
//   - "clustercache": Cluster API v1.9+'s ClusterCache (a 100-worker
//     connector, fixed 30 s retry, 10 s / 5 s / 5 probes, getters fail fast,
//     objects enqueued on connect and disconnect);
//   - "clusterpool": this library with its default Options, errors mapped by
//     kube.Requeue, outcomes fed back with Report, events enqueueing objects
//     as kube.Source does; plus labelled tuned variants.
//
// The timings of the first two follow Cluster API's source (v1.8.4 and
// v1.14.2), cited where each constant is defined. RunVirtual runs one strategy on one Scenario in
// virtual time (a synctest bubble: durations exact, code free), which is
// what `make bench-scenarios` reports; Run runs it in real time with every
// duration multiplied by a time-scale factor (default 1/100), every figure
// reported unscaled. Scenarios lists the five
// scenarios (bench/README.md describes them).
package sim
