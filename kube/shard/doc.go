// Package shard spreads the clusters of a multi-cluster controller across
// its replicas with coordination.k8s.io Leases, so that each replica dials,
// caches and reconciles only its share of the fleet.
//
// Every replica runs a [Sharder] (a manager.Runnable). It announces itself
// with a Lease of its own (holderIdentity = the replica, label
// [GroupLabel] = the group, so that several controllers shard
// independently), renews it every RenewInterval, reads the group's Leases
// after every renewal, and assigns each cluster key to one live member by
// rendezvous (highest-random-weight) hashing: a membership change moves only
// the clusters of the member that came or went.
//
// Invariants (see docs/sharding.md for the argument and its assumptions):
//
//   - No double ownership: at no instant do two replicas both answer
//     [Sharder.Owns] true for one key. A joining (or rejoining) replica claims
//     nothing for one LeaseDuration after its first renewal, which is longer
//     than any old owner keeps acting on a view that does not show it; a
//     replica that cannot complete a renewal and a read of the group within
//     RenewDeadline stops owning everything (fencing by time), before any
//     other replica treats its Lease as expired (LeaseDuration after it last
//     saw the Lease change). Clocks may disagree on the time of day; they
//     must agree on the length of a second (to well within
//     LeaseDuration − RenewDeadline).
//   - Lost before gained: a replica passes a cluster it stops owning to
//     Pool.Remove when it stops owning it, so its informers are stopped
//     before another replica may own the cluster.
//   - Every change of ownership is one [Event] (Gained or Lost), delivered in
//     order to every subscriber; an Event's Time is the instant Owns changed.
//
// Use [Sharder.Predicate] to drop events of clusters owned elsewhere,
// [Source] to enqueue a cluster when it is gained, and [Getter] to refuse a
// client for a cluster owned elsewhere with [ErrNotOwned].
package shard
