// Package chaos is `make chaos` and `make chaos-short` (the driver's
// -chaos and -chaos-short): Cluster API v1.14.2's MachineHealthCheck and
// Machine reconcilers (bench/peers/capi -chaos), one manager per
// ClusterCache (the drop-in, "adapter", and the stock one), all at once on
// one workload fleet, each with a management apiserver of its own holding
// the same objects, under one seeded schedule of overlapping faults
// (classes.go: resets, black holes, trickles, apiserver restarts, token and
// certificate rotations, Secret deletions, management restarts, and issue
// 43's gray faults: slow, 20 % and 60 % errors, throttled, …) applied to
// all of them at the same instant. Each manager reaches each Cluster
// through a fault proxy (TCP) in front of a gray proxy (HTTP), its own
// (chain.go).
//
// Reading the report: per fault class, the time back — from a fault's end
// until the cluster's MachineHealthCheck and each of its Machines have
// reconciled successfully — as samples, p50 / p99 / max and how many were
// past the cache's bound (derived from its probe and retry timings, see
// boundFor); then the verdicts per cache: stuck (live Clusters not
// connected after the last fault, deleted ones' connections, clients or
// series left), leaked (goroutines, fds, TCP connections, live heap from
// the baseline to the end), crossed (Nodes read through another cluster's
// client), hung calls, panics and crashes, cut off (a throttled or
// 20 %-error cluster disconnected more than once per 5 minutes of its
// fault; grayjudge.go, which also reports whether a 60 %-error one was
// found within 30 s, a bar neither cache promises); where both caches ran,
// where the drop-in is behind the stock cache. -chaos-short is CI's gate:
// it fails unless every verdict of the drop-in is 0. -chaos-from prints a
// report's -json file again.
package chaos
